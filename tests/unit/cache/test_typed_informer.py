"""Typed informers: informer_for(cls)/lister_for(cls) decode LIST pages and watch events
straight into the kind's class and cache the frozen objects; the decoder itself; the bytes
path over a RESTClient (a stub HTTP server) and the dict fakes' path through the same decoder."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest

from pyctrl import api
from pyctrl.cache import SharedInformerFactory
from pyctrl.cache.typed import TypedDecoder, TypedListWatch
from pyctrl.errors import ApiError, NotFound
from pyctrl.kube.client import RESTClient
from pyctrl.kube.config import KubeConfig
from pyctrl.kube.watch import WatchDecoder
from pyctrl.testing import FakeClient, FakeClock
from pyctrl.testing.fake_listwatch import FakeListWatch
from tests.unit.kube.http_stub import Reply, Request, StubServer
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[3]


class GadgetSpec(api.Struct):
    size: int = 0
    owner_name: str = ""


@api.kind("typed.test.pyctrl.io/v1", "Gadget")
class Gadget(api.Object):
    spec: GadgetSpec = api.field(default_factory=GadgetSpec)


GADGETS = api.resource_for(Gadget)


def gadget(name: str, size: int = 1, ns: str = "ns", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "typed.test.pyctrl.io/v1", "kind": "Gadget",
            "metadata": {"name": name, "namespace": ns, **meta},
            "spec": {"size": size, "futureField": {"kept": "by the server only"}}}


MANAGED = [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}]


def _run(factory: SharedInformerFactory) -> Callable[[], None]:
    stop = threading.Event()
    factory.start(stop)

    def end() -> None:
        stop.set()
        factory.shutdown()

    return end


# -- the decoder ----------------------------------------------------------------------------

def test_decoder_reads_a_list_page_straight_into_the_class() -> None:
    body = orjson.dumps({"kind": "GadgetList", "metadata": {"resourceVersion": "9",
                                                             "continue": "c1"},
                         "items": [{**gadget("a", 3), "metadata": {
                             "name": "a", "namespace": "ns", "managedFields": MANAGED}}]})
    page = TypedDecoder(Gadget).page(body)
    assert page["metadata"] == {"resourceVersion": "9", "continue": "c1"}
    [item] = page["items"]
    assert type(item) is Gadget and item.spec == GadgetSpec(size=3)
    assert not hasattr(item.metadata, "managed_fields")  # dropped by the decoder
    assert TypedDecoder(Gadget).page(b'{"items":null,"metadata":{}}')["items"] == []


def test_decoder_types_object_events_and_keeps_bookmarks_and_errors_raw() -> None:
    decoder = TypedDecoder(Gadget)
    added = decoder.event(orjson.dumps({"type": "ADDED", "object": gadget("a", 2)}))
    assert added["type"] == "ADDED" and added["object"].spec.size == 2
    # Another key order (not the API server's) takes the envelope path, same result.
    later = decoder.event(b'{"object":' + orjson.dumps(gadget("a", 5)) + b',"type":"MODIFIED"}')
    assert later["type"] == "MODIFIED" and later["object"].spec.size == 5
    bookmark = decoder.event(b'{"type":"BOOKMARK","object":{"kind":"Gadget",'
                             b'"metadata":{"resourceVersion":"12"}}}')
    assert bookmark == {"type": "BOOKMARK", "object": {
        "kind": "Gadget", "metadata": {"resourceVersion": "12"}}}
    error = decoder.event(b'{"type":"ERROR","object":{"kind":"Status","code":410}}')
    assert error["object"]["code"] == 410


@pytest.mark.parametrize("line", [
    b'{"type":"ADDED","object":',
    b'not json',
    # Not JSON-broken, but without metadata: no key to keep a stand-in under.
    b'{"type":"ADDED","object":{"spec":{"size":"big"}}}',
])
def test_decoder_refuses_what_is_not_json(line: bytes) -> None:
    # An object that does not match the class is a stand-in (tests/unit/cache/test_poison.py).
    with pytest.raises(ApiError) as err:
        TypedDecoder(Gadget).event(line)
    assert err.value.reason == "WatchDecodeError"
    with pytest.raises(ApiError, match="Gadget list"):
        TypedDecoder(Gadget).page(b'{"items":[{"spec":{"size":"big"}')


def test_watch_decoder_uses_the_decoder_it_is_given() -> None:
    typed = WatchDecoder(TypedDecoder(Gadget).event)
    line = orjson.dumps({"type": "ADDED", "object": gadget("a")})
    [event] = typed.feed(line[:10]) + typed.feed(line[10:] + b"\n")
    assert isinstance(event["object"], Gadget)


# -- informers over the fakes ---------------------------------------------------------------

def test_typed_informer_over_the_fake_client_caches_frozen_typed_objects() -> None:
    clock = FakeClock()
    client = FakeClient(clock)
    client.create(GADGETS, {**gadget("a", 1), "metadata": {
        "name": "a", "namespace": "ns", "managedFields": MANAGED, "labels": {"app": "web"}}})
    client.create(GADGETS, gadget("b", 2, owner="x"))
    factory = SharedInformerFactory(client, clock=clock)
    seen: list[Any] = []

    def by_size(obj: Gadget) -> list[str]:
        seen.append(obj)
        return [str(obj.spec.size)]

    lister = factory.lister_for(Gadget, indexers={"size": by_size})
    raw = factory.informer_for(GADGETS)
    typed_informer = factory.informer_for(Gadget)
    assert raw is not typed_informer and typed_informer.name == "gadgets:typed"
    assert typed_informer.mutation_detector is None
    end = _run(factory)
    try:
        assert factory.wait_for_cache_sync(threading.Event(), timeout=10)
        a = lister.get("ns", "a")
        assert type(a) is Gadget and a.spec.size == 1
        assert (a.api_version, a.kind) == ("typed.test.pyctrl.io/v1", "Gadget")  # filled
        assert a.metadata.labels == {"app": "web"}
        with pytest.raises(AttributeError):
            a.spec.size = 5  # type: ignore[misc]
        assert lister.get("ns", "a") is a  # the cache's own object: no copy
        assert [g.metadata.name for g in lister.list("ns", "app=web")] == ["a"]
        assert [g.metadata.name for g in lister.by_index("size", "2")] == ["b"]
        assert seen and all(type(o) is Gadget for o in seen)  # indexers get typed objects
        assert isinstance(raw.get_store().get_by_key("ns/a"), dict)  # the raw one stays raw
        stored = client.get(GADGETS, "a", "ns")
        client.update(GADGETS, {**stored, "spec": {"size": 7}}, "ns")
        eventually(lambda: lister.get("ns", "a").spec.size == 7,
                   what="the watched update reached the typed cache")
        assert type(lister.get("ns", "a")) is Gadget
        client.delete(GADGETS, "b", "ns")
        eventually(lambda: lister.by_index("size", "2") == [], what="the delete")
        with pytest.raises(NotFound):
            lister.get("ns", "b")
    finally:
        end()


def test_metadata_only_is_refused_for_a_kind_class() -> None:
    with pytest.raises(ValueError, match="metadata-only"):
        SharedInformerFactory(FakeClient()).informer_for(Gadget, metadata_only=True)


def test_namespaces_give_a_typed_multi_namespace_lister() -> None:
    clock = FakeClock()
    client = FakeClient(clock)
    for ns in ("a", "b", "c"):
        client.create(GADGETS, gadget(f"g-{ns}", ns=ns))
    factory = SharedInformerFactory(client, clock=clock)
    lister = factory.lister_for(Gadget, namespaces=["a", "b"])
    end = _run(factory)
    try:
        assert factory.wait_for_cache_sync(threading.Event(), timeout=10)
        assert sorted(g.metadata.name for g in lister.list()) == ["g-a", "g-b"]
        assert isinstance(lister.get("b", "g-b"), Gadget)
    finally:
        end()


def test_typed_list_watch_decodes_the_fake_list_watch_pages_and_events() -> None:
    fake = FakeListWatch()
    fake.queue_list([gadget("a")], "5")
    lw = TypedListWatch(fake, Gadget)
    page = lw.list(limit=None, continue_=None, resource_version="")
    assert [type(o) for o in page["items"]] == [Gadget]
    assert lw.watch_list is not None  # FakeListWatch streams lists: so does the wrapper
    stream = fake.queue_watch()
    stream.add(gadget("b")).bookmark("7").end()
    events = list(lw.watch(resource_version="5", timeout_seconds=60,
                           allow_watch_bookmarks=True))
    assert isinstance(events[0]["object"], Gadget)
    assert events[1]["object"]["metadata"]["resourceVersion"] == "7"


# -- the bytes path: a RESTClient over a stub HTTP server -----------------------------------

@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer()
    yield server
    server.stop()


@pytest.mark.parametrize("transport", ["lean", "urllib3"])
def test_typed_informer_over_a_rest_client_decodes_the_response_bytes(
        stub: StubServer, transport: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    released = threading.Event()
    page1 = {"metadata": {"resourceVersion": "10", "continue": "next"},
             "items": [{**gadget("a", 1), "metadata": {"name": "a", "namespace": "ns",
                                                        "managedFields": MANAGED}}]}
    page2 = {"metadata": {"resourceVersion": "10"}, "items": [gadget("b", 2)]}
    added = orjson.dumps({"type": "ADDED", "object": {**gadget("c", 3), "metadata": {
        "name": "c", "namespace": "ns", "resourceVersion": "11"}}}) + b"\n"

    def respond(req: Request) -> Reply:
        if req.query.get("watch"):
            if len([r for r in stub.requests if r.query.get("watch")]) > 1:
                return Reply(chunks=[released])  # later watches: held open until the end
            return Reply(chunks=[added, released])
        return Reply(body=page2 if req.query.get("continue") else page1)

    stub.respond = respond
    client = RESTClient(KubeConfig.from_url(stub.url), qps=0, timeout=5.0, transport=transport)
    decoded: list[bytes] = []
    real_page = TypedDecoder.page

    def counting_page(self: TypedDecoder[Any], body: bytes) -> Any:
        decoded.append(body)
        return real_page(self, body)

    monkeypatch.setattr(TypedDecoder, "page", counting_page)
    factory = SharedInformerFactory(client, page_size=1)
    lister = factory.lister_for(Gadget)
    end = _run(factory)
    try:
        assert factory.wait_for_cache_sync(threading.Event(), timeout=10)
        eventually(lambda: len(lister.list()) == 3, what="the watched ADDED")
        assert sorted((g.metadata.name, g.spec.size) for g in lister.list()) == [
            ("a", 1), ("b", 2), ("c", 3)]
        assert all(type(g) is Gadget for g in lister.list())
        assert len(decoded) == 2  # both pages went through the typed decoder as bytes
    finally:
        released.set()
        end()
        client.close()


def test_typed_objects_encode_without_the_fields_they_do_not_declare() -> None:
    # What the docs warn about: a full write of a decoded object would drop these.
    obj = TypedDecoder(Gadget).event(orjson.dumps({"type": "ADDED", "object": gadget("a")}))
    encoded = msgspec.to_builtins(obj["object"])
    assert "futureField" not in encoded["spec"]


_DECODER_RACE = '''
import sys, threading
from pyctrl.cache.typed import TypedDecoder
from pyctrl.models.batch_v1 import Job
from pyctrl.models.core_v1 import Pod
sys.setswitchinterval(1e-6)
page = (b'{"metadata": {"resourceVersion": "5"}, "items": [{"metadata": {"name": "a", '
        b'"namespace": "n"}, "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}]}')
barrier = threading.Barrier(8)

def start(cls):
    barrier.wait()
    TypedDecoder(cls).page(page)

threads = [threading.Thread(target=start, args=(Job if i % 2 else Pod,)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
'''


def test_informers_starting_at_once_build_their_decoders_safely() -> None:
    """Typed informers build their decoders on their reflector threads, all at start: that
    is msgspec's first use of each kind (and of ObjectMeta, which every kind nests), which
    crashed the interpreter when two threads made it at once; a fresh interpreter each run."""
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", _DECODER_RACE], capture_output=True,
                              timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              check=False)
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
