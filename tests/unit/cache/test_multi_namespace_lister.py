"""MultiNamespaceLister: the listers of several namespaces read as one, and the factory's
``lister_for(..., namespaces=...)`` that builds it over shared informers."""

from __future__ import annotations

from typing import Any

import pytest

from pyctrl.cache import CONTROLLER_UID_INDEX, controller_uid_index_func
from pyctrl.cache.factory import SharedInformerFactory
from pyctrl.cache.index import NAMESPACE_INDEX, meta_namespace_index_func
from pyctrl.cache.lister import IndexerLister, Lister, MultiNamespaceLister
from pyctrl.cache.store import Indexer
from pyctrl.errors import NotFound
from pyctrl.kube.resource import CONFIGMAPS, NAMESPACES
from pyctrl.testing import FakeClient, FakeClock
from tests.unit.cache.helpers import cm


def lister_of(*objs: dict[str, Any]) -> Lister:
    idx = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func,
                            CONTROLLER_UID_INDEX: controller_uid_index_func})
    for obj in objs:
        idx.add(obj)
    return IndexerLister(idx, CONFIGMAPS)


def owned(name: str, ns: str, owner_uid: str) -> dict[str, Any]:
    return cm(name, ns=ns, metadata={"labels": {"app": name}, "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": owner_uid,
         "controller": True}]})


def names(objs: list[dict[str, Any]]) -> list[str]:
    return sorted(f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in objs)


@pytest.fixture
def merged() -> MultiNamespaceLister:
    return MultiNamespaceLister({
        "a": lister_of(owned("x", "a", "u1"), owned("y", "a", "u2")),
        "b": lister_of(owned("x", "b", "u1")),
    }, CONFIGMAPS)


def test_get_routes_by_namespace_and_an_unwatched_namespace_is_not_found(
    merged: MultiNamespaceLister,
) -> None:
    assert merged.get("a", "y")["metadata"]["namespace"] == "a"
    assert merged.get("b", "x")["metadata"]["namespace"] == "b"
    with pytest.raises(NotFound):
        merged.get("b", "y")  # watched namespace, no such object
    with pytest.raises(NotFound, match="not watched"):
        merged.get("c", "x")


def test_list_and_by_index_read_every_namespace_once(merged: MultiNamespaceLister) -> None:
    assert names(merged.list()) == ["a/x", "a/y", "b/x"]
    assert names(merged.list("a")) == ["a/x", "a/y"]
    assert merged.list("c") == []
    assert names(merged.list(label_selector="app=x")) == ["a/x", "b/x"]
    assert names(merged.list("b", {"app": "y"})) == []
    assert names(merged.by_index(CONTROLLER_UID_INDEX, "u1")) == ["a/x", "b/x"]
    assert merged.namespaces == ("a", "b")


def test_an_all_namespaces_lister_serves_every_namespace_alone() -> None:
    merged = MultiNamespaceLister({"": lister_of(owned("x", "a", "u1"), owned("x", "z", "u1"))})
    assert merged.get("z", "x")["metadata"]["namespace"] == "z"
    assert names(merged.list("a")) == ["a/x"]
    assert names(merged.by_index(CONTROLLER_UID_INDEX, "u1")) == ["a/x", "z/x"]
    with pytest.raises(ValueError):
        MultiNamespaceLister({"": lister_of(), "a": lister_of()})
    with pytest.raises(ValueError):
        MultiNamespaceLister({})


def test_factory_builds_it_over_the_shared_informer_of_each_namespace() -> None:
    factory = SharedInformerFactory(FakeClient(FakeClock()), clock=FakeClock())
    merged = factory.lister_for(CONFIGMAPS, namespaces=["a", "b", "a"], label_selector="k=v",
                                indexers={CONTROLLER_UID_INDEX: controller_uid_index_func})
    assert merged.namespaces == ("a", "b")
    assert merged.resource is CONFIGMAPS
    informers = sorted(i.name for i in factory.informers())
    assert informers == ["configmaps@a[k=v]", "configmaps@b[k=v]"]
    # The same informers as informer_for with those arguments: shared, not copies.
    a = factory.informer_for(CONFIGMAPS, namespace="a", label_selector="k=v")
    assert CONTROLLER_UID_INDEX in a.get_indexer().get_indexers()
    assert len(factory.informers()) == 2
    # "" (all namespaces) subsumes the others; a cluster-scoped resource ignores them.
    assert factory.lister_for(CONFIGMAPS, namespaces=["a", ""]).namespaces == ("",)
    assert factory.lister_for(NAMESPACES, namespaces=["a", "b"]).namespaces == ("",)
    with pytest.raises(ValueError):
        factory.lister_for(CONFIGMAPS, namespaces=[])
    with pytest.raises(ValueError):
        factory.lister_for(CONFIGMAPS, namespace="a",  # type: ignore[call-overload]
                           namespaces=["b"])
