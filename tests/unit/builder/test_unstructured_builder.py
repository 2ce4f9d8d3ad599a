"""The Builder takes Unstructured.of(R) where it takes a kind class: for_ and owns watch
typed informers of Unstructured objects, lister_for reads them, with_object hands them to
the reconciler, and the child it writes through the client is owned and enqueues its owner."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pyctrl
from pyctrl import Manager, api
from pyctrl.kube import CONFIGMAPS, Resource
from pyctrl.testing import FakeClient
from tests.unit.runtime.helpers import eventually

GIZMOS = Resource("gizmo.test.pyctrl.io", "v1", "gizmos", "Gizmo")
Gizmo = pyctrl.Unstructured.of(GIZMOS)
ConfigMapU = pyctrl.Unstructured.of(CONFIGMAPS)


class Mirror:
    """Writes each Gizmo's size into a ConfigMap it owns."""

    def __init__(self, writer: pyctrl.TypedClient) -> None:
        self.writer = writer
        self.seen: list[tuple[str, int]] = []
        self.mu = threading.Lock()

    def reconcile(self, request: pyctrl.Request, gizmo: pyctrl.Unstructured) -> None:
        assert type(gizmo) is Gizmo
        with self.mu:
            self.seen.append((request.key, gizmo.nested_int("spec", "size") or 0))
        child = ConfigMapU({"metadata": {"name": request.name, "namespace": request.namespace},
                            "data": {"size": str(gizmo.nested_int("spec", "size"))}})
        self.writer.apply(pyctrl.set_controller_reference(gizmo, child), "gizmos", force=True)


def test_a_controller_of_a_kind_with_no_class(client: FakeClient, manager: Manager,
                                              start: Callable[[], None]) -> None:
    builder = manager.controller("gizmos").for_(Gizmo).owns(ConfigMapU)
    assert builder.for_resource == GIZMOS and builder.owned_resources == (CONFIGMAPS,)
    reconciler = Mirror(pyctrl.TypedClient(manager.client_for_leader()))
    builder.complete(pyctrl.with_object(builder.lister_for(Gizmo), reconciler))
    client.create(GIZMOS, {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"size": 3}})
    start()
    eventually(lambda: _data(client) == {"size": "3"}, what="the owned child written")
    cm = api.decode(ConfigMapU, client.get(CONFIGMAPS, "g", "ns"))
    assert pyctrl.controller_of(cm) is not None and cm.metadata.owner_references[0].kind == (
        "Gizmo")
    client.delete(CONFIGMAPS, "g", "ns")  # the owned child's event requeues its owner
    eventually(lambda: _data(client) == {"size": "3"}, what="the child written again")
    with reconciler.mu:
        seen = list(reconciler.seen)
    assert len(seen) >= 2 and all(s == ("ns/g", 3) for s in seen)


def _data(client: FakeClient) -> object:
    try:
        return client.get(CONFIGMAPS, "g", "ns").get("data")
    except pyctrl.NotFound:
        return None
