"""enqueue_object / enqueue_owner handlers and predicates."""

from __future__ import annotations

from typing import Any

from pyctrl.cache import DeletedFinalStateUnknown
from pyctrl.handlers import (
    enqueue_object,
    enqueue_owner,
    generation_changed,
    label_selector_predicate,
    resource_version_changed,
)
from pyctrl.reconcile import Request


class ListQueue:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, item: Request) -> None:
        self.items.append(str(item))


def obj(name: str = "a", *, gen: int = 1, rv: str = "1", labels: dict[str, str] | None = None,
        owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "ns", "generation": gen,
                          "resourceVersion": rv, "labels": labels or {}}
    if owners is not None:
        md["ownerReferences"] = owners
    return {"metadata": md}


def owner_ref(kind: str = "Foo", api: str = "samplecontroller.pyctrl.io/v1alpha1",
              name: str = "foo-1", controller: bool = True) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": "u", "controller": controller}


def test_enqueue_object_adds_keys_for_every_event_and_tombstone() -> None:
    q = ListQueue()
    h = enqueue_object(q)
    h.on_add(obj("a"), True)
    h.on_update(obj("a"), obj("a", rv="2"))
    h.on_delete(obj("b"))
    h.on_delete(DeletedFinalStateUnknown("ns/c", None))
    h.on_delete(DeletedFinalStateUnknown("ns/d", obj("d")))
    assert q.items == ["ns/a", "ns/a", "ns/b", "ns/c", "ns/d"]


def test_generation_predicate_drops_status_only_updates() -> None:
    q = ListQueue()
    h = enqueue_object(q, [generation_changed])
    h.on_update(obj(gen=1, rv="1"), obj(gen=1, rv="2"))
    h.on_update(obj(gen=1, rv="2"), obj(gen=2, rv="3"))
    h.on_add(obj(), False)
    assert q.items == ["ns/a", "ns/a"]


def test_resource_version_predicate_drops_resync_duplicates() -> None:
    q = ListQueue()
    h = enqueue_object(q, [resource_version_changed])
    same = obj(rv="5")
    h.on_update(same, same)
    h.on_update(same, obj(rv="6"))
    assert q.items == ["ns/a"]


def test_label_selector_predicate() -> None:
    q = ListQueue()
    h = enqueue_object(q, [label_selector_predicate("app=web")])
    h.on_add(obj("x", labels={"app": "web"}), False)
    h.on_add(obj("y", labels={"app": "db"}), False)
    h.on_delete(DeletedFinalStateUnknown("ns/z", obj("z", labels={"app": "db"})))
    assert q.items == ["ns/x"]


def test_enqueue_owner_uses_the_controller_owner_of_matching_group_and_kind() -> None:
    q = ListQueue()
    h = enqueue_owner(q, "samplecontroller.pyctrl.io", "Foo")
    h.on_add(obj("d1", owners=[owner_ref(controller=False, name="not-me"),
                               owner_ref(name="foo-1")]), False)
    h.on_add(obj("d2", owners=[owner_ref(kind="Bar")]), False)
    h.on_add(obj("d3", owners=[owner_ref(api="other.io/v1")]), False)
    h.on_add(obj("d4"), False)
    h.on_update(obj("d5", owners=[owner_ref(api="samplecontroller.pyctrl.io/v2", name="foo-2")]),
                obj("d5", owners=[owner_ref(api="samplecontroller.pyctrl.io/v2", name="foo-2")]))
    h.on_delete(DeletedFinalStateUnknown("ns/d6", obj("d6", owners=[owner_ref(name="foo-3")])))
    assert q.items == ["ns/foo-1", "ns/foo-2", "ns/foo-3"]


def test_enqueue_owner_accepts_an_api_version_and_core_group() -> None:
    q = ListQueue()
    enqueue_owner(q, "apps/v1", "ReplicaSet").on_add(
        obj("p", owners=[owner_ref("ReplicaSet", "apps/v1", "rs")]), False)
    enqueue_owner(q, "v1", "Node", owner_namespaced=False).on_add(
        obj("p", owners=[owner_ref("Node", "v1", "node-1")]), False)
    assert q.items == ["ns/rs", "node-1"]


def test_handlers_never_raise_into_the_informer() -> None:
    class Broken:
        def add(self, item: Request) -> None:
            raise RuntimeError("queue exploded")

    h = enqueue_object(Broken())
    h.on_add({"no": "metadata"}, False)
    h.on_update(obj(), obj(rv="2"))
    h.on_delete(obj())
