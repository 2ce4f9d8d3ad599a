"""Unstructured through the one client and the one cache: TypedClient's verbs, a typed
informer and lister, synced_lister and the owner-reference helpers take
``Unstructured.of(R)`` where they take a kind class."""

from __future__ import annotations

import threading

import pytest

import pyctrl
from pyctrl import api
from pyctrl.cache import SharedInformerFactory
from pyctrl.errors import Conflict, NotFound
from pyctrl.kube import CONFIGMAPS, SECRETS, Resource
from pyctrl.testing import FakeClient, FakeClock, synced_lister
from tests.waiting import eventually

ConfigMapU = pyctrl.Unstructured.of(CONFIGMAPS)
GIZMOS = Resource("gizmo.test.pyctrl.io", "v1", "gizmos", "Gizmo")
Gizmo = pyctrl.Unstructured.of(GIZMOS)


def configmap(name: str, **data: str) -> pyctrl.Unstructured:
    return ConfigMapU({"metadata": {"name": name, "namespace": "ns"}, "data": data})


@pytest.fixture
def fake() -> FakeClient:
    return FakeClient(FakeClock())


def test_crud_through_the_typed_client(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    created = client.create(configmap("a", k="v"))
    assert type(created) is ConfigMapU and created.metadata.uid
    assert fake.get(CONFIGMAPS, "a", "ns")["data"] == {"k": "v"}  # what the server holds
    got = client.get(ConfigMapU, "a", "ns")
    assert got == created and got["data"] == {"k": "v"}
    updated = client.update(api.replace(got, data={"k": "w"}))
    assert updated["data"] == {"k": "w"}
    with pytest.raises(Conflict):  # the stale resourceVersion is the lock
        client.update(api.replace(got, data={"k": "x"}))
    patched = client.patch(ConfigMapU, "a", {"data": {"n": "1"}}, "ns", patch_type="merge")
    assert patched["data"] == {"k": "w", "n": "1"}
    client.create(configmap("b"))
    assert sorted(c.metadata.name for c in client.list(ConfigMapU, "ns")) == ["a", "b"]
    client.delete(ConfigMapU, "b", "ns")
    client.delete(patched)
    assert client.list(ConfigMapU, "ns") == []
    with pytest.raises(NotFound):
        client.get(ConfigMapU, "a", "ns")


def test_apply_finalizers_and_status_on_a_kind_with_no_model(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    applied = client.apply(Gizmo({"metadata": {"name": "g", "namespace": "ns"},
                                  "spec": {"size": 2}}), "test")
    assert applied.kind == "Gizmo" and applied["spec"] == {"size": 2}
    held = client.add_finalizer(applied, "test.pyctrl.io/hold")
    assert held.metadata.finalizers == ["test.pyctrl.io/hold"]
    done = client.patch_status(held, api.replace(held, status={"ready": True}))
    assert done["status"] == {"ready": True}
    assert fake.get(GIZMOS, "g", "ns")["status"] == {"ready": True}
    assert client.patch_status(done, done) is done  # nothing changed: no request
    freed = client.remove_finalizer(done, "test.pyctrl.io/hold")
    assert freed.metadata.finalizers == []


def test_owner_references_on_an_unstructured_child(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    owner = client.create(pyctrl.Unstructured.of(SECRETS)(
        {"metadata": {"name": "s", "namespace": "ns"}}))
    child = pyctrl.set_controller_reference(owner, configmap("c"))
    assert type(child) is ConfigMapU and pyctrl.is_controlled_by(child, owner)
    stored = client.apply(child, "test")
    assert pyctrl.controller_of(stored) is not None
    assert fake.get(CONFIGMAPS, "c", "ns")["metadata"]["ownerReferences"][0]["uid"] == (
        owner.metadata.uid)


def test_a_typed_informer_and_listers_of_unstructured(fake: FakeClient) -> None:
    fake.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns",
                                          "labels": {"app": "web"}}, "data": {"k": "v"}})
    assert [c["data"] for c in synced_lister(fake, ConfigMapU).list()] == [{"k": "v"}]
    factory = SharedInformerFactory(fake, clock=FakeClock())
    lister = factory.lister_for(ConfigMapU)
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(threading.Event(), timeout=10)
        a = lister.get("ns", "a")
        assert type(a) is ConfigMapU and a["data"] == {"k": "v"}
        assert (a.api_version, a.kind) == ("v1", "ConfigMap")
        assert [c.metadata.name for c in lister.list("ns", "app=web")] == ["a"]
        fake.create(CONFIGMAPS, {"metadata": {"name": "b", "namespace": "ns"}})
        eventually(lambda: len(lister.list()) == 2, what="the watched ADDED")
        assert type(lister.get("ns", "b")) is ConfigMapU
    finally:
        stop.set()
        factory.shutdown()


def test_an_unbound_unstructured_has_nowhere_to_go(fake: FakeClient) -> None:
    with pytest.raises(api.SchemaError):
        pyctrl.TypedClient(fake).create(pyctrl.Unstructured(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}))
