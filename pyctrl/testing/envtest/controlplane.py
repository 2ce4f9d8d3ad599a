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

from pyctrl.testing.envtest.binaries import Binaries
from pyctrl.testing.envtest.certs import Pki, generate_pki
from pyctrl.testing.envtest.components import (
    Components,
    ControlPlaneError,
    Unsupported,
    poll_until,
)
from pyctrl.testing.envtest.http import AdminHttp
from pyctrl.testing.envtest.kubeconfig import write_kubeconfig
from pyctrl.testing.envtest.manifests import load_manifests
from pyctrl.testing.envtest.pods import FakePods
from pyctrl.testing.envtest.ports import free_port
from pyctrl.testing.envtest.process import Proc, reap_stale_dirs
from pyctrl.testing.envtest.webhooks import InstalledWebhooks, install_webhooks

__all__ = ["DEFAULT_CONTROLLERS", "ControlPlane", "ControlPlaneError", "Unsupported"]

DEFAULT_CONTROLLERS: tuple[str, ...] = (
    "garbagecollector", "namespace", "serviceaccount", "serviceaccount-token",
)
_DIR_PREFIX = "pyctrl-envtest-"
_CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


class ControlPlane(Components):
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
            poll_until(lambda n=name: _established(http, n), timeout, f"waiting for CRD {name}")
            group, versions = crd["spec"]["group"], crd["spec"]["versions"]
            plural = crd["spec"]["names"]["plural"]
            for version in versions:
                if version.get("served", True):
                    poll_until(lambda v=version["name"], g=group, p=plural: _served(http, g, v, p),
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
