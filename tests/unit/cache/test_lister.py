"""Lister reads; the factory's sharing and lifecycle (selectors: kube/test_selectors.py)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pyctrl.cache.factory import SharedInformerFactory
from pyctrl.cache.index import NAMESPACE_INDEX, meta_namespace_index_func
from pyctrl.cache.lister import IndexerLister
from pyctrl.cache.store import Indexer
from pyctrl.errors import NotFound
from pyctrl.kube.resource import CONFIGMAPS, JOBS, NAMESPACES
from pyctrl.testing.fake_clock import FakeClock
from pyctrl.testing.fake_listwatch import FakeListWatch
from tests.unit.cache.helpers import WAIT, cm


def labelled(name: str, ns: str, **labels: str) -> dict[str, Any]:
    return cm(name, ns=ns, metadata={"labels": labels})


def test_lister_get_list_by_namespace_and_labels() -> None:
    idx = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    idx.add(labelled("a", "ns1", app="web", tier="fe"))
    idx.add(labelled("b", "ns1", app="db"))
    idx.add(labelled("c", "ns2", app="web"))
    lister = IndexerLister(idx, CONFIGMAPS)
    assert lister.get("ns1", "a")["metadata"]["name"] == "a"
    with pytest.raises(NotFound):
        lister.get("ns1", "zzz")

    def names(objs: list[dict[str, Any]]) -> list[str]:
        return sorted(o["metadata"]["name"] for o in objs)

    assert names(lister.list()) == ["a", "b", "c"]
    assert names(lister.list("ns1")) == ["a", "b"]
    assert names(lister.list(label_selector="app=web")) == ["a", "c"]
    assert names(lister.list("ns1", {"app": "web"})) == ["a"]
    assert names(lister.by_index(NAMESPACE_INDEX, "ns2")) == ["c"]
    plain = IndexerLister(Indexer())  # no namespace index: falls back to a scan
    plain._indexer.add(labelled("x", "ns1"))
    assert names(plain.list("ns1")) == ["x"]


class _StubClient:
    """Just enough of pyctrl.kube.Client for the factory: list/watch via FakeListWatches."""

    def __init__(self) -> None:
        self.lws: dict[str, FakeListWatch] = {}

    def lw(self, plural: str, namespace: str | None = None) -> FakeListWatch:
        return self.lws.setdefault(f"{plural}@{namespace}", FakeListWatch())

    def list(self, resource: Any, namespace: Any = None, **kw: Any) -> Any:
        return self.lw(resource.plural, namespace).list(
            limit=kw["limit"], continue_=kw["continue_"],
            resource_version=kw["resource_version"])

    def watch(self, resource: Any, namespace: Any = None, **kw: Any) -> Any:
        return self.lw(resource.plural, namespace).watch(
            resource_version=kw["resource_version"], timeout_seconds=kw["timeout_seconds"],
            allow_watch_bookmarks=kw["allow_watch_bookmarks"])


def test_factory_shares_informers_starts_waits_and_shuts_down() -> None:
    client = _StubClient()
    factory = SharedInformerFactory(client, clock=FakeClock())  # type: ignore[arg-type]
    cms = factory.informer_for(CONFIGMAPS)
    assert factory.informer_for(CONFIGMAPS) is cms
    assert factory.informer_for(CONFIGMAPS, namespace="x") is not cms
    assert factory.informer_for(NAMESPACES, namespace="ignored") is factory.informer_for(
        NAMESPACES)
    jobs_lister = factory.lister_for(JOBS, indexers={"dummy": meta_namespace_index_func})
    client.lw("configmaps").queue_list([cm("a")], "5")
    client.lw("jobs").queue_list([], "5")
    client.lw("namespaces").queue_list([{"metadata": {"name": "default"}}], "5")
    stop = threading.Event()
    factory.start(stop)
    factory.start(stop)  # idempotent for already-started informers
    try:
        # The namespace-"x" configmaps informer has no list scripted: it will not sync.
        assert not factory.wait_for_cache_sync(stop, timeout=0)
        assert cms.wait_for_sync(stop, WAIT)
        assert factory.lister_for(CONFIGMAPS).get("default", "a")["metadata"]["name"] == "a"
        assert jobs_lister.list() == []
    finally:
        factory.shutdown()
    assert all(inf.is_stopped() for inf in factory.informers())
    with pytest.raises(RuntimeError):
        factory.start(stop)
