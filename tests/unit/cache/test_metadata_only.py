"""Metadata-only informers: the Accept header on the wire, the fake's PartialObjectMetadata
answers, and the factory's and Builder's metadata caches (typed as the resource, spec-less)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyctrl import Manager, ManagerOptions, MetricsOptions
from pyctrl.cache import CONTROLLER_UID_INDEX, SharedInformerFactory
from pyctrl.kube.client import RESTClient
from pyctrl.kube.config import KubeConfig
from pyctrl.kube.interface import RawObject
from pyctrl.kube.options import (
    METADATA_LIST_ACCEPT,
    METADATA_WATCH_ACCEPT,
    ListOptions,
)
from pyctrl.kube.resource import CONFIGMAPS, JOBS, SECRETS
from pyctrl.testing import Action, FakeClient, FakeClock
from tests.threads import running_manager
from tests.unit.builder.test_builder import Seen, cm, owned_secret
from tests.unit.kube.http_stub import Reply, StubServer
from tests.waiting import eventually

NO_RUNTIME_METRICS = ManagerOptions(metrics=MetricsOptions(runtime_metrics=False))


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer()
    yield server
    server.stop()


def test_accept_header_asks_for_the_list_form_on_list_and_the_object_form_on_watch() -> None:
    assert ListOptions().accept(watch=False) == "application/json"
    assert ListOptions().accept(watch=True) == "application/json"
    meta = ListOptions(metadata_only=True)
    assert meta.accept(watch=False) == METADATA_LIST_ACCEPT
    assert meta.accept(watch=True) == METADATA_WATCH_ACCEPT
    assert "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1" in METADATA_LIST_ACCEPT
    assert "as=PartialObjectMetadata;g=meta.k8s.io;v=v1" in METADATA_WATCH_ACCEPT
    for accept in (METADATA_LIST_ACCEPT, METADATA_WATCH_ACCEPT):
        assert accept.endswith(",application/json")  # a server that cannot convert
    assert meta.list_query() == {} and meta.watch_query() == {
        "watch": "true", "allowWatchBookmarks": "true"}  # no query parameter


@pytest.mark.parametrize("transport", ["lean", "urllib3"])
def test_rest_client_sends_the_metadata_accept_header(stub: StubServer, transport: Any) -> None:
    stub.respond = lambda req: (
        Reply(chunks=[b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}\n'])
        if req.query.get("watch") else Reply(body={"items": [], "metadata": {}}))
    client = RESTClient(KubeConfig.from_url(stub.url), qps=0, timeout=5.0, transport=transport)
    try:
        client.list(CONFIGMAPS, "ns", metadata_only=True)
        client.list(CONFIGMAPS, "ns")
        client.list_raw(CONFIGMAPS, "ns", options=ListOptions(metadata_only=True))
        list(client.watch(CONFIGMAPS, "ns", metadata_only=True, timeout_seconds=5))
        list(client.watch(CONFIGMAPS, "ns", timeout_seconds=5))
    finally:
        client.close()
    assert [r.headers["accept"] for r in stub.requests] == [
        METADATA_LIST_ACCEPT, "application/json", METADATA_LIST_ACCEPT,
        METADATA_WATCH_ACCEPT, "application/json"]


def test_fake_client_answers_metadata_only_as_partial_object_metadata() -> None:
    client = FakeClient()
    client.create(CONFIGMAPS, cm("a"))
    page = client.list(CONFIGMAPS, "ns", metadata_only=True)
    assert (page["apiVersion"], page["kind"]) == ("meta.k8s.io/v1", "PartialObjectMetadataList")
    [item] = page["items"]
    assert set(item) == {"apiVersion", "kind", "metadata"}
    assert (item["kind"], item["metadata"]["name"]) == ("PartialObjectMetadata", "a")
    assert client.actions[-1].options["metadata_only"] is True
    stream = client.watch(CONFIGMAPS, "ns", metadata_only=True, resource_version="",
                          timeout_seconds=0)
    [event] = list(stream)
    assert event["type"] == "ADDED" and "data" not in event["object"]
    assert event["object"]["kind"] == "PartialObjectMetadata"


def _run(factory: SharedInformerFactory) -> Callable[[], None]:
    stop = threading.Event()
    factory.start(stop)

    def end() -> None:
        stop.set()
        factory.shutdown()

    return end


def test_factory_metadata_informer_caches_typed_metadata_apart_from_the_full_one() -> None:
    clock = FakeClock()
    client = FakeClient(clock)
    client.create(CONFIGMAPS, cm("a", labels={"app": "web"}))
    factory = SharedInformerFactory(client, clock=clock)
    meta = factory.informer_for(CONFIGMAPS, metadata_only=True)
    assert factory.informer_for(CONFIGMAPS, metadata_only=True) is meta
    full = factory.informer_for(CONFIGMAPS)
    assert full is not meta and meta.name == "configmaps:metadata"
    lister = factory.lister_for(CONFIGMAPS, metadata_only=True)
    end = _run(factory)
    try:
        assert factory.wait_for_cache_sync(threading.Event(), timeout=10)
        cached = lister.get("ns", "a")
        assert set(cached) == {"apiVersion", "kind", "metadata"}
        assert (cached["apiVersion"], cached["kind"]) == ("v1", "ConfigMap")
        assert cached["metadata"]["labels"] == {"app": "web"}
        assert full.get_store().get_by_key("ns/a")["data"] == {"k": "v"}  # type: ignore[index]
        obj = client.get(CONFIGMAPS, "a", "ns")
        obj["metadata"]["labels"] = {"app": "db"}
        client.update(CONFIGMAPS, obj, "ns")
        eventually(lambda: lister.get("ns", "a")["metadata"]["labels"] == {"app": "db"},
                   what="the watched update reached the metadata cache")
        assert lister.get("ns", "a")["kind"] == "ConfigMap"
    finally:
        end()
    lists = [a for a in client.actions if a.verb in ("list", "watch")]
    assert {a.options["metadata_only"] for a in lists} == {True, False}


def test_full_objects_from_a_server_that_cannot_convert_are_reduced() -> None:
    clock = FakeClock()
    client = FakeClient(clock)
    client.create(CONFIGMAPS, cm("a"))

    def full_list(action: Action) -> RawObject:  # a server ignoring the PartialObjectMetadata ask
        return {"apiVersion": "v1", "kind": "ConfigMapList",
                "metadata": {"resourceVersion": client.resource_version},
                "items": client.list_objects(CONFIGMAPS, action.namespace)}

    client.prepend_reactor("list", CONFIGMAPS, full_list)
    factory = SharedInformerFactory(client, clock=clock)
    lister = factory.lister_for(CONFIGMAPS, metadata_only=True)
    end = _run(factory)
    try:
        assert factory.wait_for_cache_sync(threading.Event(), timeout=10)
        assert lister.get("ns", "a") == {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": client.get(CONFIGMAPS, "a", "ns")["metadata"]}
    finally:
        end()


def test_builder_owns_metadata_only_enqueues_owners_from_the_metadata_cache() -> None:
    clock = FakeClock()
    client = FakeClient(clock)
    manager = Manager(client, NO_RUNTIME_METRICS, clock=clock)
    seen = Seen()
    builder = manager.controller("meta").for_(CONFIGMAPS).owns(SECRETS, metadata_only=True)
    secrets = builder.lister_for(SECRETS)
    builder.complete(seen)
    assert sorted(i.name for i in manager.informers.informers()) == [
        "configmaps", "secrets:metadata"]
    owner = client.create(CONFIGMAPS, cm("owner"))
    client.create(SECRETS, {**owned_secret("child", owner), "data": {"x": "eQ=="}})
    with running_manager(manager) as runner:
        eventually(lambda: seen.names() == {"ns/owner"}, what="owner reconciled")
        eventually(lambda: len(secrets.list()) == 1, what="child cached")
        [child] = secrets.by_index(CONTROLLER_UID_INDEX, owner["metadata"]["uid"])
        assert (child["kind"], "data" in child) == ("Secret", False)
    assert not runner.thread.is_alive()


def test_builder_readers_follow_the_metadata_only_watch() -> None:
    manager = Manager(FakeClient(), NO_RUNTIME_METRICS, clock=FakeClock())
    builder = manager.controller("pinned").for_(CONFIGMAPS)
    builder.lister_for(JOBS)  # undeclared: a full informer
    with pytest.raises(ValueError, match="metadata_only"):
        builder.owns(JOBS, metadata_only=True)
    builder.owns(JOBS)
    controller = builder.complete(Seen())
    controller.queue.shut_down()  # the manager never ran: nobody else stops its queue
