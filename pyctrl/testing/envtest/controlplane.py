"""ControlPlane: a real etcd + kube-apiserver (+ kube-controller-manager) for tests.

Contract:

* ``with ControlPlane(crd_dirs=[...], controller_manager=True) as cp:`` starts etcd and
  kube-apiserver on free 127.0.0.1 ports with freshly generated certificates, writes an admin
  kubeconfig at ``cp.kubeconfig_path``, waits for ``/readyz``, installs the CRDs found in
  ``crd_dirs`` and waits until each is Established and served. With ``controller_manager=True``
  it also runs kube-controller-manager (garbage collector, namespace and service-account
  controllers by default) so owned objects are garbage-collected.
* ``ControlPlane(..., pods=True, fake_nodes=N)`` also runs the KCM's ``job`` controller,
  kube-scheduler, kwok and N fake Nodes, so a Job's pods are scheduled and run (on paper) to
  Succeeded or Failed as their metadata says (:mod:`pyctrl.testing.envtest.pods`). Off by
  default: it costs processes and start time that most tests do not need. On an existing
  cluster it starts nothing (that cluster's own nodes run the pods).
* ``kill()`` SIGKILLs them all instead, for a throwaway plane that must go at once (make run).
* On exit (also on an exception, KeyboardInterrupt, interpreter exit, or SIGTERM to a process
  whose SIGTERM handler was the default) it stops exactly the processes it started and removes
  its temp dir. If the whole test process is SIGKILLed, the children die with it (PDEATHSIG)
  and the next ControlPlane removes the orphaned temp dir.
* When ``PYCTRL_TEST_KUBECONFIG`` is set (or ``kubeconfig=`` is passed) it starts nothing and
  uses that cluster instead (how the same suite runs against kind); CRDs are applied with
  kubectl. Operations that need our own processes (``compact_etcd``, ``restart_apiserver``)
  raise :class:`Unsupported` there, and tests that need them skip.
* ``install_webhooks(sources, url_base, ca_pem, ...)`` registers the project's admission
  webhook configurations against a server on this host (see
  :mod:`pyctrl.testing.envtest.webhooks`); owned control planes only.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import types
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pyctrl.clock import RealClock
from pyctrl.testing.envtest.binaries import Binaries, find_binaries
from pyctrl.testing.envtest.certs import Pki, generate_pki
from pyctrl.testing.envtest.http import AdminHttp, plain_post
from pyctrl.testing.envtest.kubeconfig import write_kubeconfig
from pyctrl.testing.envtest.manifests import load_manifests
from pyctrl.testing.envtest.pods import FakePods
from pyctrl.testing.envtest.ports import free_port, port_open
from pyctrl.testing.envtest.process import Proc, reap_stale_dirs, spawn
from pyctrl.testing.envtest.webhooks import InstalledWebhooks, install_webhooks

__all__ = ["DEFAULT_CONTROLLERS", "ControlPlane", "ControlPlaneError", "Unsupported"]

DEFAULT_CONTROLLERS: tuple[str, ...] = (
    "garbagecollector", "namespace", "serviceaccount", "serviceaccount-token",
)
_DIR_PREFIX = "pyctrl-envtest-"
# These are real processes: envtest waits on them in real time, through the Clock API.
_CLOCK = RealClock()
_CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


class ControlPlaneError(RuntimeError):
    """A control-plane process failed to start or become ready."""


class Unsupported(RuntimeError):
    """The operation needs processes we own, but we are using an existing cluster."""


def _wait(predicate: Any, timeout: float, what: str, proc: Proc | None = None) -> None:
    """Poll ``predicate`` (real time: these are real servers) until true or fail loudly."""
    deadline = _CLOCK.monotonic() + timeout
    delay = 0.05
    while True:
        if proc is not None and not proc.running():
            raise ControlPlaneError(f"{proc.name} exited while {what}:\n{proc.log_tail()}")
        with contextlib.suppress(OSError):
            if predicate():
                return
        if _CLOCK.monotonic() > deadline:
            tail = f"\n{proc.log_tail()}" if proc is not None else ""
            raise ControlPlaneError(f"timed out after {timeout:.0f}s {what}{tail}")
        threading.Event().wait(delay)
        delay = min(delay * 1.5, 0.5)


class ControlPlane:
    """A throwaway Kubernetes control plane (see module docstring)."""

    def __init__(
        self,
        crd_dirs: Sequence[Path | str] = (),
        controller_manager: bool = False,
        *,
        controllers: Sequence[str] = DEFAULT_CONTROLLERS,
        apiserver_args: Sequence[str] = (),
        controller_manager_args: Sequence[str] = (),
        kubeconfig: str | None = None,
        start_timeout: float = 60.0,
        binaries: Binaries | None = None,
        pods: bool = False,
        fake_nodes: int = 2,
    ) -> None:
        if pods and fake_nodes < 1:
            raise ValueError(f"pods mode needs fake_nodes >= 1, got {fake_nodes}")
        self.crd_dirs = [Path(d) for d in crd_dirs]
        self.pods = pods
        self.fake_nodes = fake_nodes
        # Pods mode needs the KCM: its job controller creates the pods.
        self.controller_manager = controller_manager or pods
        self.controllers = list(controllers)
        if pods and "job" not in self.controllers:
            self.controllers.append("job")
        self.apiserver_args = list(apiserver_args)
        self.controller_manager_args = list(controller_manager_args)
        self.start_timeout = start_timeout
        existing = kubeconfig if kubeconfig is not None else os.environ.get(
            "PYCTRL_TEST_KUBECONFIG"
        )
        self.external = bool(existing)
        self.kubeconfig_path: str = existing or ""
        self.server = ""
        self._binaries = binaries
        self._dir: Path | None = None
        self._pki: Pki | None = None
        self._etcd: Proc | None = None
        self._apiserver: Proc | None = None
        self._kcm: Proc | None = None
        self._fake_pods: FakePods | None = None
        self._etcd_port = 0
        self._apiserver_port = 0
        self._http: AdminHttp | None = None
        self._lock = threading.RLock()
        self._started = False

    # -- lifecycle ------------------------------------------------------------------------
    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> ControlPlane:
        """Start everything (or attach to the existing cluster) and install CRDs."""
        with self._lock:
            if self._started:
                return self
            self._started = True
            atexit.register(self.stop)
            _install_sigterm_as_exit()
            try:
                if self.external:
                    self._apply_external(self.crd_dirs)
                else:
                    self._start_owned()
                    self.install_crds(load_manifests(self.crd_dirs))
                    # After the CRDs: the garbage collector then watches their kinds from
                    # its first discovery, instead of after its 30 s discovery resync.
                    if self.controller_manager:
                        self.start_controller_manager()
                    if self.pods:
                        self._start_fake_pods()
            except BaseException:
                self.stop()
                raise
            return self

    def stop(self) -> None:
        """Stop the processes this ControlPlane started and delete its temp dir. Idempotent."""
        with self._lock:
            if self._fake_pods is not None:
                self._fake_pods.stop()
                self._fake_pods = None
            for proc in (self._kcm, self._apiserver, self._etcd):
                if proc is not None:
                    proc.stop()
            self._kcm = self._apiserver = self._etcd = None
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None
            self._started = False
            with contextlib.suppress(Exception):
                atexit.unregister(self.stop)

    def kill(self) -> None:
        """Stop at once: SIGKILL every process started here (a graceful kube-apiserver
        shutdown alone takes seconds), then :meth:`stop`. For throwaway data only."""
        with self._lock:
            if self._fake_pods is not None:
                self._fake_pods.kill()
            for proc in (self._kcm, self._apiserver, self._etcd):
                if proc is not None:
                    proc.kill()
            self.stop()

    @property
    def directory(self) -> Path:
        if self._dir is None:
            raise Unsupported("this ControlPlane owns no directory (not started or external)")
        return self._dir

    @property
    def pki(self) -> Pki:
        if self._pki is None:
            raise Unsupported("no PKI: not started, or using an existing cluster")
        return self._pki

    @property
    def binaries(self) -> Binaries:
        if self._binaries is None:
            self._binaries = find_binaries()
        return self._binaries

    def _start_owned(self) -> None:
        tmp_parent = Path(tempfile.gettempdir())
        reap_stale_dirs(tmp_parent, _DIR_PREFIX)
        self._dir = Path(tempfile.mkdtemp(prefix=f"{_DIR_PREFIX}{os.getpid()}-"))
        self._pki = generate_pki(self._dir / "pki")
        self._start_etcd()
        self._apiserver_port = free_port()
        self.server = f"https://127.0.0.1:{self._apiserver_port}"
        self.kubeconfig_path = str(write_kubeconfig(
            self._dir / "admin.kubeconfig", server=self.server, ca_cert=self._pki.ca_cert,
            client_cert=self._pki.admin_cert, client_key=self._pki.admin_key,
        ))
        self._http = AdminHttp(
            self.server, self._pki.ca_cert, self._pki.admin_cert, self._pki.admin_key
        )
        self.start_apiserver()

    # -- etcd -----------------------------------------------------------------------------
    def _start_etcd(self) -> None:
        data = self.directory / "etcd"
        self._etcd_port, peer = free_port(), free_port()
        client_url = f"http://127.0.0.1:{self._etcd_port}"
        peer_url = f"http://127.0.0.1:{peer}"
        self._etcd = spawn("etcd", [
            str(self.binaries.etcd),
            "--name=envtest", f"--data-dir={data}",
            f"--listen-client-urls={client_url}", f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=envtest={peer_url}",
            "--unsafe-no-fsync=true",  # throwaway data: durability buys nothing, fsync costs
            "--log-level=warn",
        ], self.directory / "etcd.log")
        _wait(lambda: plain_post(f"{client_url}/v3/kv/range", {"key": "YQ=="})[0] == 200,
              self.start_timeout, "waiting for etcd", self._etcd)

    def etcd_revision(self) -> int:
        """The current etcd revision."""
        if self.external:
            raise Unsupported("etcd is not ours when using an existing cluster")
        status, body = plain_post(f"http://127.0.0.1:{self._etcd_port}/v3/kv/range",
                                  {"key": base64.b64encode(b"/").decode()})
        if status != 200:
            raise ControlPlaneError(f"etcd range failed: {status} {body}")
        return int(body["header"]["revision"])

    def compact_etcd(self) -> int:
        """Compact etcd at its current revision, so older resourceVersions answer 410 Gone."""
        rev = self.etcd_revision()
        status, body = plain_post(f"http://127.0.0.1:{self._etcd_port}/v3/kv/compaction",
                                  {"revision": rev, "physical": True})
        if status != 200:
            raise ControlPlaneError(f"etcd compaction failed: {status} {body}")
        return rev

    # -- kube-apiserver -------------------------------------------------------------------
    def start_apiserver(self) -> None:
        """(Re)start kube-apiserver on its port and wait for /readyz."""
        if self.external:
            raise Unsupported("the apiserver is not ours when using an existing cluster")
        pki = self.pki
        argv = [
            str(self.binaries.kube_apiserver),
            f"--etcd-servers=http://127.0.0.1:{self._etcd_port}",
            f"--secure-port={self._apiserver_port}", "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--cert-dir={self.directory / 'apiserver-certs'}",
            f"--tls-cert-file={pki.serving_cert}", f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            f"--service-account-key-file={pki.sa_pub}",
            f"--service-account-signing-key-file={pki.sa_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=RBAC",
            "--allow-privileged=true",
            # Pods never run here (no kubelet); without kube-controller-manager the default
            # ServiceAccount would not exist and this plugin would reject pods for it.
            "--disable-admission-plugins=ServiceAccount",
            "--v=1",
            *self.apiserver_args,
        ]
        self._apiserver = spawn("kube-apiserver", argv, self.directory / "kube-apiserver.log")
        _wait(self._ready, self.start_timeout, "waiting for kube-apiserver /readyz",
              self._apiserver)

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver (clients see connection refused until ``start_apiserver``)."""
        if self._apiserver is not None:
            self._apiserver.stop()
            self._apiserver = None

    def restart_apiserver(self) -> None:
        """Stop and start kube-apiserver on the same port (watches break, data stays)."""
        self.stop_apiserver()
        self.start_apiserver()

    def _ready(self) -> bool:
        assert self._http is not None
        status, _ = self._http.request("GET", "/readyz", timeout=2.0)
        return status == 200

    @property
    def http(self) -> AdminHttp:
        """Admin JSON access to the apiserver (owned control planes only)."""
        if self._http is None:
            raise Unsupported("no admin HTTP client for an existing cluster; use kubectl")
        return self._http

    # -- pods mode ----------------------------------------------------------------------------
    def _start_fake_pods(self) -> None:
        self._fake_pods = FakePods(
            self.binaries, self.directory, self.kubeconfig_path, self.http,
            nodes=self.fake_nodes, timeout=self.start_timeout, wait=_wait,
        )
        try:
            self._fake_pods.start()
        except FileNotFoundError as err:
            raise ControlPlaneError(str(err)) from err

    @property
    def fake_node_names(self) -> list[str]:
        """The fake Nodes of pods mode (empty otherwise)."""
        return list(self._fake_pods.node_names) if self._fake_pods is not None else []

    # -- kube-controller-manager ------------------------------------------------------------
    def start_controller_manager(
        self, controllers: Sequence[str] | None = None, extra_args: Sequence[str] = ()
    ) -> None:
        """Start kube-controller-manager with the given controllers (default: GC & co)."""
        if self.external:
            raise Unsupported("kube-controller-manager is not ours on an existing cluster")
        self.stop_controller_manager()
        pki = self.pki
        kcm = self.binaries.kube_controller_manager
        if kcm is None:
            raise ControlPlaneError("kube-controller-manager binary not found")
        port = free_port()
        argv = [
            str(kcm), f"--kubeconfig={self.kubeconfig_path}",
            f"--authentication-kubeconfig={self.kubeconfig_path}",
            f"--authorization-kubeconfig={self.kubeconfig_path}",
            f"--controllers={','.join(controllers or self.controllers)}",
            "--leader-elect=false", f"--secure-port={port}", "--bind-address=127.0.0.1",
            f"--cert-dir={self.directory / 'kcm-certs'}",
            f"--service-account-private-key-file={pki.sa_key}",
            f"--root-ca-file={pki.ca_cert}",
            "--use-service-account-credentials=false",
            "--v=1",
            *self.controller_manager_args, *extra_args,
        ]
        self._kcm = spawn("kube-controller-manager", argv,
                          self.directory / "kube-controller-manager.log")
        ctx_http = AdminHttp(f"https://127.0.0.1:{port}", pki.ca_cert, pki.admin_cert,
                             pki.admin_key)
        # Its serving cert is self-signed by itself, so probe liveness via the port only.
        _wait(lambda: port_open(port) and ctx_http is not None, self.start_timeout,
              "waiting for kube-controller-manager", self._kcm)

    def stop_controller_manager(self) -> None:
        if self._kcm is not None:
            self._kcm.stop()
            self._kcm = None

    @property
    def controller_manager_pid(self) -> int | None:
        return self._kcm.pid if self._kcm is not None else None

    @property
    def apiserver_pid(self) -> int | None:
        """The kube-apiserver's pid; None when not started or external."""
        return self._apiserver.pid if self._apiserver is not None else None

    @property
    def etcd_pid(self) -> int | None:
        """etcd's pid; None when not started or external."""
        return self._etcd.pid if self._etcd is not None else None

    # -- CRDs and manifests ---------------------------------------------------------------
    def install_crds(self, crds: Iterable[dict[str, Any]], timeout: float = 30.0) -> None:
        """Create or update CRDs and wait until Established and served by discovery."""
        if self.external:
            raise Unsupported("use apply() for an existing cluster")
        http = self.http
        names = []
        for crd in crds:
            if crd.get("kind") != "CustomResourceDefinition":
                continue
            name = crd["metadata"]["name"]
            names.append((name, crd))
            status, body = http.request("POST", _CRD_PATH, crd)
            if status == 409:
                status, current = http.request("GET", f"{_CRD_PATH}/{name}")
                updated = dict(crd)
                updated["metadata"] = dict(crd["metadata"],
                                           resourceVersion=current["metadata"]["resourceVersion"])
                status, body = http.request("PUT", f"{_CRD_PATH}/{name}", updated)
            if status >= 300:
                raise ControlPlaneError(f"installing CRD {name} failed: {status} {body}")
        for name, crd in names:
            _wait(lambda n=name: _established(http, n), timeout, f"waiting for CRD {name}")
            group, versions = crd["spec"]["group"], crd["spec"]["versions"]
            plural = crd["spec"]["names"]["plural"]
            for version in versions:
                if version.get("served", True):
                    _wait(lambda v=version["name"], g=group, p=plural: _served(http, g, v, p),
                          timeout,
                          f"waiting for discovery of {plural}.{group}")

    def _apply_external(self, paths: Sequence[Path]) -> None:
        if not paths:
            return
        self.kubectl("apply", "--server-side", "--force-conflicts",
                     *[a for p in paths for a in ("-f", str(p))])
        self.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                     *[a for p in paths for a in ("-f", str(p))])

    def kubectl(self, *args: str, check: bool = True, input: str | None = None
                ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this control plane; raises on failure when ``check``.

        For an owned plane kubectl keeps its discovery cache in the plane's directory: the
        shared ~/.kube/cache is keyed by host:port, and a port reused by a later plane (other
        CRDs; parallel test workers start many) would start from another plane's discovery.
        """
        kubectl = self._kubectl_path()
        cache = [f"--cache-dir={self._dir / 'kubectl-cache'}"] if self._dir is not None else []
        return subprocess.run(
            [kubectl, f"--kubeconfig={self.kubeconfig_path}", *cache, *args],
            check=check, capture_output=True, text=True, input=input, timeout=120,
        )

    def _kubectl_path(self) -> str:
        if self._binaries is not None and self._binaries.kubectl is not None:
            return str(self._binaries.kubectl)
        found = shutil.which("kubectl")
        if self.external and found:
            return found
        kubectl = self.binaries.kubectl
        if kubectl is None:
            raise ControlPlaneError("kubectl not found (`pyctrl envtest install` builds one)")
        return str(kubectl)

    def install_webhooks(
        self, sources: Iterable[Path | str | dict[str, Any]], url_base: str, ca_pem: bytes,
        *, namespaces: Sequence[str] | None = None, name_suffix: str = "",
        probe: dict[str, Any] | None = None, timeout: float = 30.0,
    ) -> InstalledWebhooks:
        """Register the webhook configurations in ``sources`` at ``url_base`` trusting
        ``ca_pem``; with ``probe``, wait until the apiserver calls them (see
        :func:`pyctrl.testing.envtest.webhooks.install_webhooks`)."""
        if self.external:
            raise Unsupported("webhooks by URL on 127.0.0.1 need a local control plane")
        return install_webhooks(self.http, sources, url_base, ca_pem, namespaces=namespaces,
                                name_suffix=name_suffix, probe=probe, timeout=timeout)

    def write_token_kubeconfig(self, token: str, path: Path | str, user: str = "sa") -> Path:
        """A kubeconfig for this cluster that authenticates with a bearer ``token``."""
        if self.external:
            raise Unsupported("token kubeconfigs are only written for owned control planes")
        return write_kubeconfig(Path(path), server=self.server, ca_cert=self.pki.ca_cert,
                                token=token, user=user)


def _established(http: AdminHttp, name: str) -> bool:
    status, body = http.request("GET", f"{_CRD_PATH}/{name}")
    if status != 200:
        return False
    for cond in (body.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Established" and cond.get("status") == "True":
            return True
    return False


def _served(http: AdminHttp, group: str, version: str, plural: str) -> bool:
    status, body = http.request("GET", f"/apis/{group}/{version}")
    if status != 200 or not any(r.get("name") == plural for r in body.get("resources", [])):
        return False
    # Discovery can list the resource while its watch cache still answers 429 "storage is
    # (re)initializing"; only a successful LIST means clients can use it.
    status, _ = http.request("GET", f"/apis/{group}/{version}/{plural}?limit=1")
    return status == 200


def _install_sigterm_as_exit() -> None:
    """Turn a default-handled SIGTERM into SystemExit so atexit cleanup runs."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        def _exit(signum: int, frame: types.FrameType | None) -> None:
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, _exit)
