"""Pods mode: kube-scheduler, kwok and fake nodes, so a Job's pods run to the end.

envtest's default control plane has no scheduler and no kubelet: a Job's pods stay Pending
and tests write Job status by hand. ``ControlPlane(pods=True)`` adds, after
kube-controller-manager (which then also runs the ``job`` controller):

* kube-scheduler, which binds pods to nodes;
* kwok (Kubernetes WithOut Kubelet), which plays the kubelet for nodes annotated
  ``kwok.x-k8s.io/node=fake`` following upstream kwok's own Stage files (built by
  ``pyctrl envtest install`` into ``<binaries>/kwok-stages``);
* ``nodes`` such fake Nodes (``kwok-node-0``, ...), Ready before ``start`` returns.

What a pod does there is set by its own metadata, read by those Stages (see
:func:`fake_run`): a bound pod is Running at once; a Job's pod then Succeeds after its
``pod-complete.stage.kwok.x-k8s.io/delay`` (1 to 5 s when unset), or, labelled
``pod-container-running-failed.stage.kwok.x-k8s.io=true``, Fails after that Stage's delay;
a deleted pod goes away at once. Nothing here runs a container.

Contract: :meth:`FakePods.start` returns once the scheduler listens and every fake Node is
Ready (so kwok is watching); :meth:`FakePods.stop` (``kill``: SIGKILL at once) stops exactly
the processes it started and is idempotent. Owned control planes only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

from pyctrl.testing.envtest.binaries import Binaries
from pyctrl.testing.envtest.http import AdminHttp
from pyctrl.testing.envtest.ports import free_port, port_open
from pyctrl.testing.envtest.process import Proc, spawn

__all__ = [
    "COMPLETE_DELAY",
    "COMPLETE_JITTER",
    "COMPLETE_WEIGHT",
    "FAIL_DELAY",
    "FAIL_JITTER",
    "FAIL_LABEL",
    "FAKE_NODE_ANNOTATION",
    "FakePods",
    "PodMetadata",
    "fake_run",
]

#: The annotation (and value) kwok manages nodes by; our fake Nodes carry it.
FAKE_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
# Annotations and the label read by upstream kwok's pod Stages (kustomize/stage/pod/...).
# kwok waits ``delay`` plus a random part up to ``jitter-delay``; a jitter-delay at or below
# the delay makes the wait exactly the jitter-delay, so fake_run sets both to the same value.
COMPLETE_DELAY = "pod-complete.stage.kwok.x-k8s.io/delay"
COMPLETE_JITTER = "pod-complete.stage.kwok.x-k8s.io/jitter-delay"
COMPLETE_WEIGHT = "pod-complete.stage.kwok.x-k8s.io/weight"
FAIL_LABEL = "pod-container-running-failed.stage.kwok.x-k8s.io"
FAIL_DELAY = "pod-container-running-failed.stage.kwok.x-k8s.io/delay"
FAIL_JITTER = "pod-container-running-failed.stage.kwok.x-k8s.io/jitter-delay"

class PodMetadata(TypedDict):
    """``labels`` and ``annotations`` for a pod template's ``metadata``."""

    labels: dict[str, str]
    annotations: dict[str, str]


def fake_run(seconds: float, *, fail: bool = False) -> PodMetadata:
    """Pod metadata that makes a kwok pod run ``seconds`` and then Succeed (or Fail).

    Merge it into a Job's ``spec.template.metadata``. Failing needs the label (it selects
    kwok's failure Stage) and a zero weight for the success Stage, which would otherwise
    win one time in ten thousand.
    """
    if seconds < 0:
        raise ValueError(f"seconds must be >= 0, got {seconds}")
    wait = f"{int(seconds * 1000)}ms"
    if fail:
        return {"labels": {FAIL_LABEL: "true"},
                "annotations": {FAIL_DELAY: wait, FAIL_JITTER: wait, COMPLETE_WEIGHT: "0"}}
    return {"labels": {}, "annotations": {COMPLETE_DELAY: wait, COMPLETE_JITTER: wait}}


def fake_node(name: str) -> dict[str, object]:
    """A Node that kwok manages, with room for plenty of pods."""
    room = {"cpu": "64", "memory": "256Gi", "pods": "500"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {FAKE_NODE_ANNOTATION[0]: FAKE_NODE_ANNOTATION[1]},
            "labels": {"type": "kwok", "kubernetes.io/hostname": name,
                       "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
        },
        "status": {"capacity": room, "allocatable": room},
    }


class FakePods:
    """kube-scheduler + kwok + fake Nodes for one owned control plane (see module doc)."""

    def __init__(
        self, binaries: Binaries, directory: Path, kubeconfig_path: str, http: AdminHttp,
        *, nodes: int, timeout: float,
        wait: Callable[[Callable[[], bool], float, str, Proc | None], None],
    ) -> None:
        if nodes < 1:
            raise ValueError(f"pods mode needs at least one fake node, got {nodes}")
        self._binaries = binaries
        self._dir = directory
        self._kubeconfig = kubeconfig_path
        self._http = http
        self._timeout = timeout
        self._wait = wait
        self.node_names = [f"kwok-node-{i}" for i in range(nodes)]
        self._scheduler: Proc | None = None
        self._kwok: Proc | None = None

    def start(self) -> None:
        """Start the scheduler and kwok, register the fake Nodes, wait until they are Ready."""
        b = self._binaries
        if b.kube_scheduler is None or b.kwok is None or b.kwok_stages is None:
            raise FileNotFoundError(
                f"pods mode needs kube-scheduler, kwok and kwok-stages/ in {b.directory}: "
                "`pyctrl envtest install` builds them (KUBEBUILDER_ASSETS has none)"
            )
        port = free_port()
        kc = self._kubeconfig
        self._scheduler = spawn("kube-scheduler", [
            str(b.kube_scheduler), f"--kubeconfig={kc}",
            f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}",
            "--leader-elect=false", f"--secure-port={port}", "--bind-address=127.0.0.1",
            f"--cert-dir={self._dir / 'scheduler-certs'}", "--v=1",
        ], self._dir / "kube-scheduler.log")
        stages = sorted(b.kwok_stages.glob("*.yaml"))
        self._kwok = spawn("kwok", [
            str(b.kwok), f"--kubeconfig={kc}",
            f"--manage-nodes-with-annotation-selector={'='.join(FAKE_NODE_ANNOTATION)}",
            # Off the apiserver's service range; nothing routes to these addresses anyway.
            "--cidr=10.244.0.0/16",
            *(f"--config={s}" for s in stages),
        ], self._dir / "kwok.log")
        for name in self.node_names:
            self._register_node(name)
        self._wait(lambda: port_open(port), self._timeout, "waiting for kube-scheduler",
                   self._scheduler)
        for name in self.node_names:
            self._wait(functools.partial(self._node_ready, name), self._timeout,
                       f"waiting for kwok to make node {name} Ready", self._kwok)

    def stop(self) -> None:
        """Stop kwok and the scheduler (the Nodes stay, like the rest of etcd's data)."""
        for proc in (self._kwok, self._scheduler):
            if proc is not None:
                proc.stop()
        self._kwok = self._scheduler = None

    def kill(self) -> None:
        """SIGKILL kwok and the scheduler at once (see ``ControlPlane.kill``)."""
        for proc in (self._kwok, self._scheduler):
            if proc is not None:
                proc.kill()
        self._kwok = self._scheduler = None

    def _register_node(self, name: str) -> None:
        status, body = self._http.request("POST", "/api/v1/nodes", fake_node(name))
        if status not in (201, 409):
            raise RuntimeError(f"creating fake node {name} failed: {status} {body}")
        # The apiserver's TaintNodesByCondition admission gives every new Node the
        # not-ready NoSchedule taint; the KCM's node lifecycle controller would lift it once
        # the Node is Ready, but that controller is not run here (kwok posts no heartbeats it
        # would accept for long), so lift it now: the scheduler would place nothing.
        status, body = self._http.request(
            "PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": None}},
            content_type="application/merge-patch+json",
        )
        if status != 200:
            raise RuntimeError(f"untainting fake node {name} failed: {status} {body}")

    def _node_ready(self, name: str) -> bool:
        status, body = self._http.request("GET", f"/api/v1/nodes/{name}")
        if status != 200:
            return False
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in (body.get("status") or {}).get("conditions") or [])
