"""PartialObjectMetadata.of(R): the lean typed form of a metadata-only informer: the factory
lists and watches PartialObjectMetadata for it, decodes it typed, retypes it as the resource's
kind; synced_lister and the Builder take it; any other kind class refuses metadata_only."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

import pyctrl
from pyctrl import Manager, api
from pyctrl.cache import CONTROLLER_UID_INDEX, SharedInformerFactory
from pyctrl.kube import CONFIGMAPS, SECRETS
from pyctrl.models.core_v1 import ConfigMap
from pyctrl.testing import FakeClient, FakeClock, synced_lister
from tests.waiting import eventually

ConfigMapMeta = api.PartialObjectMetadata.of(CONFIGMAPS)


def test_a_metadata_only_typed_informer(client: FakeClient) -> None:
    client.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns",
                                          "labels": {"app": "web"}}, "data": {"k": "v"}})
    factory = SharedInformerFactory(client, clock=FakeClock())
    lister = factory.lister_for(ConfigMapMeta)
    informer = factory.informer_for(ConfigMapMeta)
    assert informer is factory.informer_for(ConfigMapMeta, metadata_only=True)
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(threading.Event(), timeout=10)
        a = lister.get("ns", "a")
        assert type(a) is ConfigMapMeta and a.metadata.labels == {"app": "web"}
        assert (a.api_version, a.kind) == ("v1", "ConfigMap")  # not PartialObjectMetadata
        assert not hasattr(a, "data")
        lists = [x for x in client.actions if x.verb == "list"]
        assert lists and all(x.options.get("metadata_only") for x in lists)
        client.create(CONFIGMAPS, {"metadata": {"name": "b", "namespace": "ns"}})
        eventually(lambda: len(lister.list()) == 2, what="the watched ADDED")
        assert lister.get("ns", "b").kind == "ConfigMap"
    finally:
        stop.set()
        factory.shutdown()


def test_other_kind_classes_have_no_metadata_only_form(client: FakeClient) -> None:
    factory = SharedInformerFactory(client, clock=FakeClock())
    with pytest.raises(ValueError, match=r"PartialObjectMetadata\.of"):
        factory.informer_for(ConfigMap, metadata_only=True)
    with pytest.raises(api.SchemaError):
        factory.informer_for(api.PartialObjectMetadata)


def test_synced_lister_reduces_the_fakes_objects(client: FakeClient) -> None:
    client.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}, "data": {"k": "v"}})
    [a] = synced_lister(client, ConfigMapMeta).list()
    assert type(a) is ConfigMapMeta and (a.api_version, a.kind) == ("v1", "ConfigMap")


def test_owns_with_the_metadata_form_enqueues_the_owner(
        client: FakeClient, manager: Manager, start: Callable[[], None]) -> None:
    builder = manager.controller("secrets").for_(pyctrl.Unstructured.of(SECRETS)).owns(
        ConfigMapMeta)
    seen: list[str] = []
    mu = threading.Lock()

    def reconcile(request: pyctrl.Request) -> None:
        with mu:
            seen.append(request.key)

    builder.complete(reconcile)
    owned = builder.lister_for(ConfigMapMeta)
    owner = pyctrl.TypedClient(client).create(pyctrl.Unstructured.of(SECRETS)(
        {"metadata": {"name": "s", "namespace": "ns"}}))
    start()
    eventually(lambda: "ns/s" in seen, what="the owner's own event")
    with mu:
        seen.clear()
    child = pyctrl.set_controller_reference(owner, ConfigMap(
        metadata=api.ObjectMeta(name="c", namespace="ns")))
    pyctrl.TypedClient(client).create(child)
    eventually(lambda: "ns/s" in seen, what="the owned child's event enqueued its owner")
    [cached] = owned.by_index(CONTROLLER_UID_INDEX, owner.metadata.uid)
    assert type(cached) is ConfigMapMeta and cached.metadata.name == "c"
