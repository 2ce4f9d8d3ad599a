"""The processes of an owned :class:`~pyctrl.testing.envtest.ControlPlane`: etcd,
kube-apiserver, kube-controller-manager and pods mode (kube-scheduler, kwok, fake Nodes).

Contract: :class:`Components` is ControlPlane's base; its methods use the state
ControlPlane's constructor and start set (declared on the class). On an existing cluster
(``ControlPlane(kubeconfig=...)``) what needs a process of ours raises :class:`Unsupported`
(starting one, etcd's revision and compaction, the admin ``http`` client); stopping one is
a no-op and its pid None. etcd and kube-apiserver listen on free 127.0.0.1 ports;
:meth:`Components.start_apiserver` and :meth:`Components.start_controller_manager` (re)start
theirs and return once it serves (``/readyz``; the KCM: its port open), else raise
:class:`ControlPlaneError` with the end of its log. :func:`poll_until` is that wait, in real
time (these are real servers) through the Clock API.
"""

from __future__ import annotations

import base64
import contextlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyctrl.clock import RealClock
from pyctrl.testing.envtest.binaries import Binaries, find_binaries
from pyctrl.testing.envtest.certs import Pki
from pyctrl.testing.envtest.http import AdminHttp, plain_post
from pyctrl.testing.envtest.pods import FakePods
from pyctrl.testing.envtest.ports import free_port, port_open
from pyctrl.testing.envtest.process import Proc, spawn

__all__ = ["Components", "ControlPlaneError", "Unsupported", "poll_until"]

# These are real processes: envtest waits on them in real time, through the Clock API.
_CLOCK = RealClock()


class ControlPlaneError(RuntimeError):
    """A control-plane process failed to start or become ready."""


class Unsupported(RuntimeError):
    """The operation needs processes we own, but we are using an existing cluster."""


def poll_until(predicate: Any, timeout: float, what: str, proc: Proc | None = None) -> None:
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


class Components:
    """etcd, kube-apiserver, kube-controller-manager and pods mode (see module docstring)."""

    # Set by ControlPlane (its constructor, then start).
    external: bool
    start_timeout: float
    kubeconfig_path: str
    apiserver_args: list[str]
    controllers: list[str]
    controller_manager_args: list[str]
    fake_nodes: int
    _binaries: Binaries | None
    _dir: Path | None
    _pki: Pki | None
    _etcd: Proc | None
    _apiserver: Proc | None
    _kcm: Proc | None
    _fake_pods: FakePods | None
    _etcd_port: int
    _apiserver_port: int
    _http: AdminHttp | None

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
        poll_until(lambda: plain_post(f"{client_url}/v3/kv/range", {"key": "YQ=="})[0] == 200,
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
        poll_until(self._ready, self.start_timeout, "waiting for kube-apiserver /readyz",
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
            nodes=self.fake_nodes, timeout=self.start_timeout, wait=poll_until,
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
        poll_until(lambda: port_open(port) and ctx_http is not None, self.start_timeout,
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
