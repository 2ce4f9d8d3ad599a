"""pyctrl.Unstructured against a real API server: the typed client's verbs decode the
response bytes into it (managedFields dropped, every other field kept), a paged typed
informer of it follows a watch, and apply/finalizers/status work on a kind with no class."""

from __future__ import annotations

import threading

import pytest

import pyctrl
from pyctrl.cache import SharedInformerFactory
from pyctrl.errors import Conflict, NotFound
from pyctrl.kube import CONFIGMAPS, RESTClient
from tests.waiting import eventually

pytestmark = pytest.mark.integration

ConfigMapU = pyctrl.Unstructured.of(CONFIGMAPS)


def test_unstructured_through_the_client_and_a_typed_informer(client: RESTClient,
                                                              namespace: str) -> None:
    typed = pyctrl.TypedClient(client)
    made = typed.create(ConfigMapU({"metadata": {"name": "u", "namespace": namespace,
                                                 "labels": {"app": "u"}},
                                    "data": {"k": "v"}, "binaryData": {"b": "AA=="}}))
    assert made.metadata.uid and made["data"] == {"k": "v"} and made["binaryData"]
    assert (made.api_version, made.kind) == ("v1", "ConfigMap")
    got = typed.get(ConfigMapU, "u", namespace)  # decoded from the GET's bytes
    assert got == made and "managedFields" not in got.to_dict()["metadata"]
    held = typed.add_finalizer(got, "test.pyctrl.io/hold")
    with pytest.raises(Conflict):  # the stale copy's resourceVersion is refused
        typed.update(got.replace(data={"k": "stale"}))
    updated = typed.update(held.replace(data={"k": "w"}))
    assert updated["data"] == {"k": "w"} and updated["binaryData"] == {"b": "AA=="}

    factory = SharedInformerFactory(client, namespace=namespace, page_size=2)
    for i in range(4):
        typed.create(ConfigMapU({"metadata": {"name": f"p{i}", "namespace": namespace,
                                              "labels": {"app": "u"}}}))
    lister = factory.lister_for(ConfigMapU, label_selector="app=u")
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(stop, timeout=60)
        assert sorted(o.metadata.name for o in lister.list()) == ["p0", "p1", "p2", "p3", "u"]
        cached = lister.get(namespace, "u")
        assert type(cached) is ConfigMapU and cached["data"] == {"k": "w"}
        typed.patch(ConfigMapU, "p0", {"data": {"new": "1"}}, namespace, patch_type="merge")
        eventually(lambda: lister.get(namespace, "p0").get("data") == {"new": "1"},
                   timeout=30, what="the watched change")
        freed = typed.remove_finalizer(typed.get(ConfigMapU, "u", namespace),
                                       "test.pyctrl.io/hold")
        typed.delete(freed)
        eventually(lambda: all(o.metadata.name != "u" for o in lister.list()), timeout=30,
                   what="the watched delete")
        with pytest.raises(NotFound):
            typed.get(ConfigMapU, "u", namespace)
    finally:
        stop.set()
        factory.shutdown()


def test_a_typed_metadata_only_informer(client: RESTClient, namespace: str) -> None:
    typed = pyctrl.TypedClient(client)
    for i in range(5):
        typed.create(ConfigMapU({"metadata": {"name": f"m{i}", "namespace": namespace,
                                              "labels": {"meta": "yes"}},
                                 "data": {"big": "x" * 1000}}))
    factory = SharedInformerFactory(client, namespace=namespace, page_size=2)
    lister = factory.lister_for(pyctrl.api.PartialObjectMetadata.of(CONFIGMAPS),
                                label_selector="meta=yes")
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(stop, timeout=60)
        cached = lister.list()
        assert sorted(o.metadata.name for o in cached) == [f"m{i}" for i in range(5)]
        assert {(o.api_version, o.kind) for o in cached} == {("v1", "ConfigMap")}
        assert all(o.metadata.uid and o.metadata.labels == {"meta": "yes"} for o in cached)
        typed.patch(ConfigMapU, "m0", {"metadata": {"labels": {"extra": "1"}}}, namespace,
                    patch_type="merge")
        eventually(lambda: lister.get(namespace, "m0").metadata.labels.get("extra") == "1",
                   timeout=30, what="the watched metadata change")
        assert lister.get(namespace, "m0").kind == "ConfigMap"  # a watch event, retyped
    finally:
        stop.set()
        factory.shutdown()
