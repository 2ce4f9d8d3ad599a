"""WatchList informers against a real kube-apiserver: the streaming initial sync (WatchList is
on by default in kube-apiserver 1.34+), and the fallback to paged LIST on a server with the
feature gate off."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from pyctrl.cache import SharedInformerFactory
from pyctrl.cache.informer import SharedIndexInformer
from pyctrl.cache.listwatch import ListWatch, Pages
from pyctrl.kube.client import RESTClient
from pyctrl.kube.interface import WatchStream
from pyctrl.kube.resource import CONFIGMAPS, NAMESPACES
from pyctrl.testing.envtest import ControlPlane
from tests.integration.test_informer import create_configmaps, fresh_state, wait_until
from tests.threads import running

pytestmark = pytest.mark.integration


class RecordingListWatch(ListWatch):
    """Records how the informer synced: LIST pages and watch-lists."""

    calls: list[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        object.__setattr__(self, "calls", [])

    def list_pages(self, *, limit: int | None, resource_version: str) -> Pages:
        self.calls.append("list")
        return super().list_pages(limit=limit, resource_version=resource_version)

    def watch_list(self, *, resource_version: str, timeout_seconds: int) -> WatchStream:
        self.calls.append("watch-list")
        return super().watch_list(resource_version=resource_version,
                                  timeout_seconds=timeout_seconds)


def _sync(client: RESTClient, namespace: str) -> tuple[SharedIndexInformer, RecordingListWatch]:
    lw = RecordingListWatch(client, CONFIGMAPS, namespace)
    informer = SharedIndexInformer(lw, name="wl", page_size=7, watch_list=True)
    return informer, lw


def _cached(informer: SharedIndexInformer) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"]
            for o in informer.get_indexer().list()}


def test_watch_list_sync_then_the_same_stream_follows_changes(
    client: RESTClient, namespace: str
) -> None:
    create_configmaps(client, namespace, 30)
    informer, lw = _sync(client, namespace)
    with running(informer.run, name="it-watch-list", join_timeout=60) as stop:
        assert informer.wait_for_sync(stop, 60)
        assert _cached(informer) == fresh_state(client, namespace)
        obj = client.get(CONFIGMAPS, "cm-1", namespace)
        obj["data"] = {"v": "1"}
        client.update(CONFIGMAPS, obj, namespace)
        client.delete(CONFIGMAPS, "cm-2", namespace)
        assert wait_until(lambda: _cached(informer) == fresh_state(client, namespace))
    assert lw.calls == ["watch-list"]


@pytest.fixture(scope="module")
def gate_off() -> Iterator[ControlPlane]:
    with ControlPlane(apiserver_args=["--feature-gates=WatchList=false"]) as cp:
        yield cp


def test_a_server_with_watch_list_off_is_synced_by_paged_list(gate_off: ControlPlane) -> None:
    client = RESTClient.from_kubeconfig(gate_off.kubeconfig_path, qps=200, burst=400)
    try:
        client.create(NAMESPACES, {"metadata": {"name": "wl-off"}})
        create_configmaps(client, "wl-off", 20)
        with capture_logs() as logs:
            factory = SharedInformerFactory(client, namespace="wl-off", page_size=7,
                                            watch_list=True)
            informer = factory.informer_for(CONFIGMAPS)
            stop = threading.Event()
            factory.start(stop)
            try:
                assert factory.wait_for_cache_sync(stop, timeout=60)
                assert _cached(informer) == fresh_state(client, "wl-off")
                client.delete(CONFIGMAPS, "cm-3", "wl-off")
                assert wait_until(lambda: len(informer.get_indexer().list()) == 19)
            finally:
                stop.set()
                factory.shutdown()
        off = [e for e in logs if e["event"].startswith("watch-list not supported")]
        assert len(off) == 1
        assert "WatchList feature gate" in off[0]["reason"]
    finally:
        client.close()


def test_metadata_only_watch_list(client: RESTClient, namespace: str) -> None:
    """Both levers at once: the streaming initial sync of PartialObjectMetadata."""
    create_configmaps(client, namespace, 12)
    factory = SharedInformerFactory(client, namespace=namespace, watch_list=True)
    lister = factory.lister_for(CONFIGMAPS, metadata_only=True)
    stop = threading.Event()
    with capture_logs() as logs:
        factory.start(stop)
        try:
            assert factory.wait_for_cache_sync(stop, timeout=60)
            cached = lister.list()
            assert {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in cached
                    } == fresh_state(client, namespace)
            assert all(set(o) == {"apiVersion", "kind", "metadata"} and o["kind"] == "ConfigMap"
                       for o in cached)
            client.delete(CONFIGMAPS, "cm-0", namespace)
            assert wait_until(lambda: len(lister.list()) == 11)
        finally:
            stop.set()
            factory.shutdown()
    assert not [e for e in logs if e["event"].startswith("watch-list not supported")]
