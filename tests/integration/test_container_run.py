"""The container image's run, proven without a Docker engine (issue 13, item 1).

``python -m cronjob_controller`` runs in a bubblewrap (``bwrap``) sandbox set up as the image
and the Deployment set up its container, against the session's real kube-apiserver:

* runtime: the Dockerfile's build stage, step by step (:data:`BUILD_STEPS`): a clean
  ``python3.11 -m venv``, ``pip install --no-deps -r requirements/runtime.lock``, then
  ``pip install --no-deps .`` of exactly the files the Dockerfile copies
  (:data:`IMAGE_SOURCES`), then ``compileall``. Like Docker's layer cache, the venv holding
  only the lock is cached under ``~/.cache/pyctrl/container-runtime/deps-<sha256 of the
  lock and interpreter>``; the package layer is rebuilt on every run from the working tree.
  The result is bound read-only at ``/opt/venv``.
* process: uid/gid 65532 (a user namespace), no capabilities, no_new_privs, its own PID
  namespace with the controller as PID 1, the image's ENV and ENTRYPOINT, and the
  Deployment's args with only the ``*-bind-address`` values moved to free 127.0.0.1 ports
  (:func:`sandbox_args`); the Deployment's env (``POD_NAME``/``POD_NAMESPACE``).
* filesystem: the host root read-only, ``/tmp`` the only writable place (a host directory
  bound there, so the test can check the Deployment's emptyDir ``sizeLimit``), the webhook
  certificate mounted read-only at the Deployment's ``--webhook-cert-dir``, and a
  TokenRequest token of the manifests' ServiceAccount (manifests' RBAC applied) with the
  apiserver's ``ca.crt`` and ``namespace`` at ``/var/run/secrets/kubernetes.io/serviceaccount``;
  ``KUBERNETES_SERVICE_HOST``/``PORT`` name the envtest apiserver (the network namespace is
  shared, so 127.0.0.1 reaches it), so the controller takes the in-cluster config path.

Not reproduced: the seccomp RuntimeDefault profile, cgroup limits, the image's own Debian
userland (the host's /usr and python3.11 are used under the venv), and the uid outside the
sandbox (the user namespace maps 65532 to the invoking user).

tests/unit/deploy/test_container_parity.py keeps the constants here in step with the Dockerfile and
the Deployment. Skips (with the reason) when ``bwrap`` is missing or can not create the
sandbox here; ``make setup`` installs Debian's ``bubblewrap`` when it can.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from cronjob_controller.__main__ import build_parser
from cronjob_controller.api import CRONJOBS, SCHEDULED_TIMESTAMP_ANNOTATION, format_rfc3339
from pyctrl.kube import JOBS, LEASES, RESTClient
from pyctrl.testing.envtest import ControlPlane
from pyctrl.testing.envtest.ports import free_port
from pyctrl.webhook import generate_certs
from tests.integration.cronjob.env import cronjob_body, minute_floor
from tests.waiting import elapsed_until, poll

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
OVERLAY = MANIFESTS / "default"  # what `make deploy` applies

# -- what the image is (tests/unit/deploy/test_container_parity.py checks these against the
# Dockerfile)
LOCK_FILE = "requirements/runtime.lock"
IMAGE_SOURCES = ("pyproject.toml", "README.md", "LICENSE", "pyctrl", "cronjob_controller")
VENV = "/opt/venv"
BUILD_STEPS: tuple[tuple[str, ...], ...] = (
    ("python", "-m", "venv", VENV),
    (f"{VENV}/bin/pip", "install", "--no-deps", "-r", LOCK_FILE),
    (f"{VENV}/bin/pip", "install", "--no-deps", "."),
    (f"{VENV}/bin/python", "-m", "compileall", "-q", VENV),
)
DEPS_LAYER = 2  # BUILD_STEPS[:2] only depend on the lock file: cached like a Docker layer
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
IMAGE_ENV = {"PATH": f"{VENV}/bin:{BASE_PATH}", "PYTHONUNBUFFERED": "1",
             "PYTHONDONTWRITEBYTECODE": "1"}
BASE_IMAGE_ENV = {"LANG": "C.UTF-8"}  # set by the python:3.11-slim base image
IMAGE_UID = IMAGE_GID = 65532
IMAGE_HOME = "/home/nonroot"  # useradd --no-create-home: set, but absent
ENTRYPOINT = ("python", "-m", "cronjob_controller")
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
BIND_SUFFIX = "-bind-address"
DEPLOYMENT = "cronjob-controller"
CONTAINER = "controller"
POD_NAME = "cronjob-controller-sandbox"
BWRAP = shutil.which("bwrap")


# -- the Deployment ----------------------------------------------------------------------------
def deployment() -> dict[str, Any]:
    """The controller's Deployment as ``make deploy`` renders it: the base Deployment with the
    JSON patches of :data:`OVERLAY` and its components applied (the webhook component adds
    the webhook server's args, port and certificate mount)."""
    dep = _base_deployment()
    kustomization = OVERLAY / "kustomization.yaml"
    if not kustomization.is_file():  # a flat manifests/ directory: the file is the Deployment
        return dep
    spec = yaml.safe_load(kustomization.read_text())
    for directory in [OVERLAY, *(OVERLAY / c for c in spec.get("components") or [])]:
        parts = yaml.safe_load((directory / "kustomization.yaml").read_text())
        for patch in parts.get("patches") or []:
            target = patch.get("target") or {}
            if target.get("kind") != "Deployment" or target.get("name") != DEPLOYMENT:
                continue
            ops = yaml.safe_load((directory / patch["path"]).read_text())
            assert isinstance(ops, list), f"{patch['path']}: only JSON patches are rendered here"
            for op in ops:
                _json_patch(dep, op)
    return dep


def _json_patch(doc: dict[str, Any], op: dict[str, Any]) -> None:
    """Apply one RFC 6902 ``add``/``replace``/``remove`` operation in place."""
    *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
    node: Any = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if op["op"] == "remove":
        del node[int(last) if isinstance(node, list) else last]
    elif isinstance(node, list):
        if last == "-":
            node.append(op["value"])
        elif op["op"] == "add":
            node.insert(int(last), op["value"])
        else:
            node[int(last)] = op["value"]
    else:
        assert op["op"] in ("add", "replace"), op
        node[last] = op["value"]


def _base_deployment() -> dict[str, Any]:
    for path in sorted(MANIFESTS.rglob("*.yaml"), key=lambda p: (len(p.parts), str(p))):
        for doc in yaml.safe_load_all(path.read_text()):
            if (isinstance(doc, dict) and doc.get("kind") == "Deployment"
                    and doc.get("metadata", {}).get("name") == DEPLOYMENT
                    and _find_container(doc) is not None):
                return doc
    raise AssertionError(f"no Deployment {DEPLOYMENT} with a container image in {MANIFESTS}")


def _find_container(dep: dict[str, Any]) -> dict[str, Any] | None:
    containers = ((dep.get("spec") or {}).get("template") or {}).get("spec", {}).get(
        "containers") or []
    for c in containers:
        if c.get("name") == CONTAINER and c.get("image"):
            return dict(c)
    return None


def container(dep: dict[str, Any]) -> dict[str, Any]:
    found = _find_container(dep)
    assert found is not None
    return found


def sandbox_args(args: Sequence[str], port: Callable[[str], int]) -> tuple[list[str],
                                                                            dict[str, int]]:
    """The Deployment's ``args`` with each enabled ``--*-bind-address`` moved to
    ``127.0.0.1:<port(flag)>``; every other argument is kept verbatim.

    Returns the new args and ``{flag: port}``. Both ``--flag=value`` and ``--flag value``.
    """
    out: list[str] = []
    ports: dict[str, int] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        flag, eq, value = arg.partition("=")
        if flag.startswith("--") and flag.endswith(BIND_SUFFIX):
            if not eq and i + 1 < len(args):
                i += 1
                value = args[i]
            if value.strip() == "0":
                out.append(f"{flag}={value}")
            else:
                ports[flag] = port(flag)
                out.append(f"{flag}=127.0.0.1:{ports[flag]}")
        else:
            out.append(arg)
        i += 1
    return out, ports


def pod_env(dep: dict[str, Any]) -> dict[str, str]:
    """The container's ``env`` as the kubelet would set it for this one pod."""
    fields = {"metadata.name": POD_NAME, "metadata.namespace": dep["metadata"]["namespace"]}
    env: dict[str, str] = {}
    for var in container(dep).get("env") or []:
        if "value" in var:
            env[var["name"]] = str(var["value"])
            continue
        path = ((var.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        assert path in fields, f"env {var['name']}: the sandbox can not provide {var}"
        env[var["name"]] = fields[path]
    return env


def _manifest(name: str) -> Path:
    for candidate in (MANIFESTS / name, MANIFESTS / "base" / name):
        if candidate.is_file():
            return candidate
    found = sorted(MANIFESTS.rglob(name))
    assert found, f"{name} not found under {MANIFESTS}"
    return found[0]


# -- building the runtime as the Dockerfile does ----------------------------------------------
def host_argv(step: Sequence[str], venv: Path, python: str) -> list[str]:
    """One of :data:`BUILD_STEPS` as run here: ``/opt/venv`` is ``venv``; ``python`` (the base
    image's interpreter) is ``python``; pip runs as ``python -m pip`` (the cached venv was
    renamed after it was made, which breaks the pip script's shebang, not pip)."""
    head, rest = step[0], [str(venv) if a == VENV else a for a in step[1:]]
    if head == "python":
        return [python, *rest]
    if head == f"{VENV}/bin/pip":
        return [str(venv / "bin" / "python"), "-m", "pip", *rest]
    assert head.startswith(f"{VENV}/"), head
    return [str(venv) + head[len(VENV):], *rest]


def _build_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_NO_CACHE_DIR")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run_steps(steps: Sequence[tuple[str, ...]], venv: Path, python: str, cwd: Path) -> None:
    for step in steps:
        argv = host_argv(step, venv, python)
        done = subprocess.run(argv, cwd=cwd, env=_build_env(), capture_output=True, text=True,
                              timeout=900, check=False)
        assert done.returncode == 0, f"{' '.join(step)} failed:\n{done.stdout}\n{done.stderr}"


def _python311() -> str:
    found = shutil.which("python3.11")
    if found is None:
        if sys.version_info[:2] != (3, 11):
            pytest.skip("no python3.11 on PATH: the image's runtime is CPython 3.11")
        found = sys.executable
    return found


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pyctrl" / "container-runtime"


def deps_layer(python: str) -> Path:
    """The cached venv after :data:`BUILD_STEPS` ``[:DEPS_LAYER]`` (built once per lock)."""
    version = subprocess.run([python, "-c", "import sys; print(sys.version)"], check=True,
                             capture_output=True, text=True).stdout.strip()
    lock = (ROOT / LOCK_FILE).read_bytes()
    key = hashlib.sha256(lock + b"\0" + version.encode()).hexdigest()[:16]
    cache = _cache_dir()
    final = cache / f"deps-{key}"
    if (final / "pyvenv.cfg").is_file():
        return final
    cache.mkdir(parents=True, exist_ok=True)
    for old in cache.glob("deps-*"):  # layers of earlier locks, unused for a day
        if time.time() - old.stat().st_mtime > 86400:
            shutil.rmtree(old, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix="building-", dir=cache))
    try:
        src = work / "src"
        (src / LOCK_FILE).parent.mkdir(parents=True)
        shutil.copyfile(ROOT / LOCK_FILE, src / LOCK_FILE)  # COPY requirements/runtime.lock
        _run_steps(BUILD_STEPS[:DEPS_LAYER], work / "venv", python, src)
        try:
            os.rename(work / "venv", final)
        except OSError:  # a concurrent run finished first: use its layer
            assert (final / "pyvenv.cfg").is_file()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def build_runtime(directory: Path) -> Path:
    """A venv built like the image's /opt/venv, from the working tree; returns its path."""
    python = _python311()
    started = time.monotonic()
    deps = deps_layer(python)
    cached = time.monotonic()
    venv = directory / "venv"
    shutil.copytree(deps, venv, symlinks=True)
    src = directory / "src"
    src.mkdir()
    for name in IMAGE_SOURCES:  # COPY pyproject.toml README.md LICENSE ./ ; COPY pyctrl ...
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, src / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copyfile(source, src / name)
    _run_steps(BUILD_STEPS[DEPS_LAYER:], venv, python, src)
    print(f"\nruntime venv: lock layer {cached - started:.1f} s, "
          f"package layer {time.monotonic() - cached:.1f} s")
    return venv


# -- the sandbox ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sandbox:
    """bwrap arguments for one container: read-only root, ``tmp`` as /tmp, read-only mounts."""

    venv: Path
    tmp: Path
    mounts: tuple[tuple[Path, str], ...]  # (host directory, path in the sandbox)
    env: dict[str, str]

    def argv(self, command: Sequence[str], info_fd: int | None = None) -> list[str]:
        assert BWRAP is not None
        run_dir = str(Path("/var/run").resolve())  # /var/run -> /run on Debian
        args = [
            BWRAP, "--unshare-user", "--uid", str(IMAGE_UID), "--gid", str(IMAGE_GID),
            "--cap-drop", "ALL", "--unshare-pid", "--as-pid-1", "--unshare-ipc",
            "--unshare-uts", "--hostname", POD_NAME, "--die-with-parent", "--new-session",
            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
            "--bind", str(self.tmp), "/tmp",
            # A pod's /run is its own and empty (the service account lives under it).
            "--tmpfs", run_dir,
        ]
        mounts = [(self.venv, VENV), *self.mounts]
        grafted: dict[str, list[tuple[Path, str]]] = {}
        for host, wanted in mounts:
            target = (run_dir + wanted[len("/var/run"):] if wanted.startswith("/var/run/")
                      else wanted)
            if (target.startswith((run_dir + "/", "/tmp/"))  # inside a writable mount
                    or Path(target).is_dir()):
                args += ["--ro-bind", str(host), target]
            else:
                grafted.setdefault(_graft_point(target), []).append((host, target))
        for point, binds in grafted.items():
            # The mount point does not exist under the read-only root: shadow its nearest
            # existing parent with a tmpfs holding the host's entries, bind, make it read-only.
            args += ["--tmpfs", point]
            for entry in sorted(Path(point).iterdir()):
                if entry.is_symlink():
                    args += ["--symlink", os.readlink(entry), str(entry)]
                else:
                    args += ["--ro-bind-try", str(entry), str(entry)]
            for host, target in binds:
                args += ["--ro-bind", str(host), target]
            args += ["--remount-ro", point]
        args += ["--remount-ro", run_dir, "--clearenv"]
        for name, value in self.env.items():
            args += ["--setenv", name, value]
        args += ["--chdir", "/"]
        if info_fd is not None:
            args += ["--info-fd", str(info_fd)]
        return [*args, "--", *command]


def _graft_point(target: str) -> str:
    path = Path(target).parent
    while not path.is_dir():
        path = path.parent
    if str(path) == "/":
        pytest.skip(f"can not create {target} under a read-only root without a parent dir")
    return str(path)


def _bwrap_unusable() -> str | None:
    if BWRAP is None:
        return ("bwrap (bubblewrap) not found: `make setup` installs Debian's bubblewrap "
                "when it can (root and apt-get)")
    probe = [BWRAP, "--unshare-user", "--uid", str(IMAGE_UID), "--gid", str(IMAGE_GID),
             "--cap-drop", "ALL", "--unshare-pid", "--as-pid-1", "--die-with-parent",
             "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
             "--", "/bin/sh", "-c", "test \"$(id -u):$(id -g)\" = 65532:65532"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bwrap does not work here: {err}"
    if done.returncode != 0:
        return (f"bwrap can not create a uid {IMAGE_UID} sandbox here "
                f"(exit {done.returncode}): {done.stderr.strip()[:300]}")
    return None


# -- fixtures ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory, control_plane: ControlPlane) -> Path:
    if control_plane.external:
        pytest.skip("needs the envtest apiserver's CA and 127.0.0.1 address")
    unusable = _bwrap_unusable()
    if unusable is not None:
        pytest.skip(unusable)
    return build_runtime(tmp_path_factory.mktemp("image"))


@pytest.fixture
def service_account(control_plane: ControlPlane, tmp_path: Path) -> Path:
    """What the kubelet mounts at /var/run/secrets/kubernetes.io/serviceaccount."""
    if control_plane.external:
        pytest.skip("needs the envtest apiserver's CA and 127.0.0.1 address")
    for name in ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml"):
        control_plane.kubectl("apply", "-f", str(_manifest(name)))
    dep = deployment()
    ns = dep["metadata"]["namespace"]
    sa = dep["spec"]["template"]["spec"]["serviceAccountName"]
    token = control_plane.kubectl("create", "token", sa, "-n", ns, "--duration=1h").stdout
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text(token.strip())
    shutil.copyfile(control_plane.pki.ca_cert, directory / "ca.crt")
    (directory / "namespace").write_text(ns)
    for path in directory.iterdir():
        path.chmod(0o644)
    return directory


@dataclass
class Running:
    popen: subprocess.Popen[bytes]
    log: Path
    pid: int  # the controller (PID 1 in the sandbox), as seen from here
    ports: dict[str, int]
    webhook_ca: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def url(self, flag: str, path: str, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.ports[flag]}{path}"


def _get(url: str, context: ssl.SSLContext | None = None) -> int:
    try:
        with urllib.request.urlopen(url, timeout=3, context=context) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        with err:  # closes its response (3.14 warns of one left open)
            return int(err.code)
    except OSError:
        return 0


def _child_pid(info: Path, popen: subprocess.Popen[bytes]) -> int | None:
    try:
        return int(json.loads(info.read_text())["child-pid"])
    except (OSError, ValueError, KeyError):
        assert popen.poll() is None, f"bwrap exited with {popen.returncode}"
        return None


# -- the test -----------------------------------------------------------------------------------
def test_image_equivalent_sandbox_runs_in_cluster_creates_the_due_job_and_stops_on_sigterm(
    runtime: Path, service_account: Path, control_plane: ControlPlane, client: RESTClient,
    namespace: str, tmp_path: Path,
) -> None:
    dep = deployment()
    ctr = container(dep)
    args, ports = sandbox_args(ctr["args"], lambda flag: free_port())
    parsed = build_parser().parse_args(args)
    assert "--health-probe-bind-address" in ports, args
    certs = generate_certs(tmp_path / "webhook-certs", ["localhost"], ["127.0.0.1"])
    mounts: list[tuple[Path, str]] = [(service_account, SA_DIR)]
    if "--webhook-bind-address" in ports:  # the webhook component's certificate Secret
        mounts.append((certs.cert_file.parent, parsed.webhook_cert_dir))
    tmp = tmp_path / "sandbox-tmp"
    tmp.mkdir()
    host, port = control_plane.server.removeprefix("https://").rsplit(":", 1)
    env = {**IMAGE_ENV, **BASE_IMAGE_ENV, "HOME": IMAGE_HOME, "HOSTNAME": POD_NAME,
           **pod_env(dep), "KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
    sandbox = Sandbox(runtime, tmp, tuple(mounts), env)

    # A CronJob whose run is already due (its anchor a minute back), so the controller
    # creates that Job as soon as its caches sync instead of at the next minute.
    base = minute_floor(datetime.now(UTC))
    client.create(CRONJOBS, cronjob_body("boxed"), namespace)
    client.patch(CRONJOBS, "boxed", {"status": {"lastScheduleTime": format_rfc3339(
        base - timedelta(minutes=1))}}, namespace, subresource="status")

    # Nothing but /tmp is writable in there (the same sandbox, a probe instead of the app).
    probe = subprocess.run(sandbox.argv(["python", "-c", _WRITE_PROBE, "/tmp",
                                         *(target for _, target in mounts), VENV, IMAGE_HOME,
                                         "/", "/etc", *_outside_tmp(str(ROOT))]),
                           capture_output=True, text=True, timeout=120, check=False)
    assert probe.returncode == 0, probe.stderr
    written = json.loads(probe.stdout)
    assert written.pop("/tmp") == "ok"
    # Name the offending paths (a truncated dict repr hid which one was writable, issue 10).
    writable = {path: result for path, result in written.items() if result != "EROFS"}
    assert not writable, f"writable (or not read-only) in the sandbox: {writable}"

    log = tmp_path / "controller.log"
    info = tmp_path / "bwrap-info.json"
    with log.open("wb") as out, info.open("wb") as info_file:
        popen = subprocess.Popen(
            sandbox.argv(list(ENTRYPOINT) + args, info_fd=info_file.fileno()),
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, pass_fds=(info_file.fileno(),))
    try:
        pid = poll(lambda: _child_pid(info, popen), 30)
        assert pid is not None, "bwrap did not report the sandboxed process"
        run = Running(popen, log, pid, ports, certs.ca_file)
        # bwrap reports the pid while it still sets the sandbox up: check once it has exec'd.
        assert poll(lambda: _execed(pid, popen), 30), run.log_text()[-4000:]
        _check_identity(run.pid)

        def serving(path: str) -> bool:
            assert popen.poll() is None, f"exited {popen.returncode}:\n{run.log_text()[-4000:]}"
            return _get(run.url("--health-probe-bind-address", path)) == 200

        assert poll(lambda: serving("/readyz"), 120, 0.2), run.log_text()[-4000:]
        assert _get(run.url("--health-probe-bind-address", "/healthz")) == 200
        job = poll(lambda: _owned_job(client, namespace, "boxed"), 60, 0.2)
        assert job is not None, run.log_text()[-4000:]
        scheduled = job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION]
        assert datetime.fromisoformat(scheduled.replace("Z", "+00:00")) >= base
        _check_servers(run, parsed.metrics_secure)

        # SIGTERM, as the kubelet sends it to the container's PID 1.
        os.kill(run.pid, signal.SIGTERM)
        limit = parsed.graceful_shutdown_timeout
        took = elapsed_until(lambda: popen.poll() is not None, limit + 15)
        print(f"\nsandboxed controller: SIGTERM to exit {took:.2f} s (graceful timeout "
              f"{limit:.0f} s)")
        assert popen.returncode == 0, run.log_text()[-4000:]
        assert took <= limit
    finally:
        if popen.poll() is None:
            popen.kill()  # bwrap; --die-with-parent takes the sandbox with it
            popen.wait(30)

    text = log.read_text(errors="replace")
    for bad in ("Read-only file system", "Traceback", "PermissionError", "Permission denied"):
        assert bad not in text, text[-4000:]
    # The pod's /tmp is an emptyDir with a sizeLimit: what the run left there fits in it.
    used = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
    assert used <= _size_limit(dep, "/tmp"), used
    # Clean stop: the leader lease is released for the standby.
    lease = client.get(LEASES, parsed.leader_elect_name, parsed.leader_elect_namespace)
    assert not lease["spec"].get("holderIdentity"), lease["spec"]


def _outside_tmp(path: str) -> list[str]:
    """``[path]`` unless it is under /tmp (a checkout there is hidden by the pod's /tmp)."""
    return [] if path == "/tmp" or path.startswith("/tmp/") else [path]


_WRITE_PROBE = """
import errno, json, os, sys
out = {}
for directory in sys.argv[1:]:
    try:
        if os.path.isdir(directory):
            with open(os.path.join(directory, ".pyctrl-write-probe"), "w") as f:
                f.write("x")
        else:
            os.makedirs(directory)
        out[directory] = "ok"
    except OSError as err:
        out[directory] = errno.errorcode.get(err.errno, str(err.errno))
print(json.dumps(out))
"""


def _execed(pid: int, popen: subprocess.Popen[bytes]) -> bool:
    assert popen.poll() is None, f"bwrap exited with {popen.returncode}"
    try:  # bwrap's own command line names the module too: look at the executable
        return "python" in Path(os.readlink(f"/proc/{pid}/exe")).name
    except OSError:
        return False


def _check_identity(pid: int) -> None:
    """uid/gid 65532 inside, every capability set empty, no_new_privs (the securityContext)."""
    status = dict(line.split(":", 1) for line in
                  Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    for caps in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status[caps].strip(), 16) == 0, (caps, status[caps])
    assert status["NoNewPrivs"].strip() == "1"
    for kind, want in (("uid_map", IMAGE_UID), ("gid_map", IMAGE_GID)):
        lines = Path(f"/proc/{pid}/{kind}").read_text().split("\n")
        mapped = [line.split() for line in lines if line.strip()]
        assert len(mapped) == 1 and int(mapped[0][0]) == want and mapped[0][2] == "1", mapped


def _owned_job(client: RESTClient, namespace: str, owner: str) -> dict[str, Any] | None:
    for job in client.list(JOBS, namespace)["items"]:
        refs = job["metadata"].get("ownerReferences") or []
        if any(r.get("name") == owner and r.get("controller") for r in refs):
            return dict(job)
    return None


def _check_servers(run: Running, metrics_secure: bool) -> None:
    """The webhook serves the mounted certificate; /metrics answers (secure: 401 untokened,
    over a certificate the controller generated in /tmp)."""
    if "--webhook-bind-address" in run.ports:
        ctx = ssl.create_default_context(cafile=str(run.webhook_ca))
        with socket.create_connection(("127.0.0.1", run.ports["--webhook-bind-address"]),
                                      timeout=5) as sock, \
                ctx.wrap_socket(sock, server_hostname="127.0.0.1") as tls:
            assert tls.version() is not None
    if "--metrics-bind-address" not in run.ports:
        return
    if not metrics_secure:
        assert _get(run.url("--metrics-bind-address", "/metrics")) == 200
        return
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # the self-signed certificate it made in /tmp
    assert _get(run.url("--metrics-bind-address", "/metrics", "https"), insecure) == 401


def _size_limit(dep: dict[str, Any], mount_path: str) -> int:
    mount = next(m for m in container(dep)["volumeMounts"] if m["mountPath"] == mount_path)
    volume = next(v for v in dep["spec"]["template"]["spec"]["volumes"]
                  if v["name"] == mount["name"])
    text = str((volume.get("emptyDir") or {}).get("sizeLimit", "1Gi"))
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", text)
    assert match, text
    return int(match.group(1)) * {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}[
        match.group(2)]
