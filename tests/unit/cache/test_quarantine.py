"""Undecodable objects in a typed informer: each failure shape becomes a stand-in under its
own key, the rest of the page and the watch go on as usual, listers and handlers cope, the
metric counts, the log says it once per resourceVersion, and a fixed object replaces it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Annotated, Any, Literal

import orjson
import pytest
import structlog
from prometheus_client import CollectorRegistry

from pyctrl import Predicate, Undecodable, api, enqueue_object, errors
from pyctrl.cache import Quarantined, SharedInformerFactory, is_quarantined
from pyctrl.cache.quarantine import undecodable_collector
from pyctrl.cache.typed import TypedDecoder, TypedListWatch
from pyctrl.reconcile import Request
from pyctrl.testing import FakeClient, FakeClock, synced_lister
from pyctrl.testing.fake_listwatch import FakeListWatch
from tests.waiting import eventually


class Part(api.Struct):
    name: str
    count: int = 0


class WidgetSpec(api.Struct):
    owner: Annotated[str, api.Required]  # no default: missing, it does not decode
    mode: Literal["Fast", "Slow"] = "Fast"
    size: int = 0
    replicas: api.Int32 = 1
    parts: list[Part] = api.field(default_factory=list)


@api.kind("poison.test.pyctrl.io/v1", "Widget")
class Widget(api.Object):
    spec: WidgetSpec


WIDGETS = api.resource_for(Widget)


def widget(name: str, rv: str = "", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "poison.test.pyctrl.io/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "resourceVersion": rv, "generation": 3},
            "spec": {"owner": "me", **spec}}


# Each failure shape: the spec that makes it, the path and a piece of the problem reported.
SHAPES: dict[str, tuple[dict[str, Any], str, str]] = {
    "wrong-enum": ({"mode": "Sometimes"}, "$.spec.mode", "Invalid enum value 'Sometimes'"),
    "wrong-type": ({"size": "big"}, "$.spec.size", "Expected `int`, got `str`"),
    "out-of-range": ({"replicas": 2**31}, "$.spec.replicas", "<= 2147483647"),
    "missing-required": ({"owner": None}, "$.spec", "missing required field `owner`"),
    "list-item-shape": ({"parts": ["bolt"]}, "$.spec.parts[0]", "Expected `object`"),
    "list-item-missing": ({"parts": [{"count": 2}]}, "$.spec.parts[0]",
                          "missing required field `name`"),
}


def poison(shape: str, name: str = "bad", rv: str = "7") -> dict[str, Any]:
    obj = widget(name, rv, **SHAPES[shape][0])
    obj["spec"] = {k: v for k, v in obj["spec"].items() if v is not None}
    return obj


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_page_keeps_every_good_item_and_a_stand_in_for_the_bad_one(shape: str) -> None:
    body = orjson.dumps({"metadata": {"resourceVersion": "9"},
                         "items": [widget("a", "1"), poison(shape), widget("z", "2")]})
    page = TypedDecoder(Widget).page(body)
    a, bad, z = page["items"]
    assert type(a) is Widget and type(z) is Widget and page["metadata"]["resourceVersion"] == "9"
    assert is_quarantined(bad) and type(bad) is Quarantined
    path, problem = SHAPES[shape][1:]
    assert bad.path == path and problem in bad.problem
    assert (bad.metadata.name, bad.metadata.uid, bad.metadata.resource_version) == (
        "bad", "uid-bad", "7")


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_watch_event_of_a_bad_object_carries_its_stand_in(shape: str) -> None:
    decoder = TypedDecoder(Widget)
    event = decoder.event(orjson.dumps({"type": "MODIFIED", "object": poison(shape)}))
    assert event["type"] == "MODIFIED" and is_quarantined(event["object"])
    assert event["object"].path == SHAPES[shape][1]


def test_unknown_and_newer_fields_decode_as_usual() -> None:
    # A field the class does not declare (a newer version's) is skipped, never an error.
    obj = widget("a", "1", futureField={"x": 1}, parts=[{"name": "n", "extra": True}])
    [item] = TypedDecoder(Widget).page(orjson.dumps({"items": [obj]}))["items"]
    assert type(item) is Widget and item.spec.parts == [Part(name="n")]


def test_an_item_without_readable_metadata_is_dropped_not_fatal() -> None:
    items = [widget("a", "1"), {"metadata": {"name": 5}, "spec": {"size": "big"}}]
    page = TypedDecoder(Widget).page(orjson.dumps({"items": items}))
    assert [o.metadata.name for o in page["items"]] == ["a"]


def test_the_stand_in_is_logged_once_per_resource_version() -> None:
    decoder = TypedDecoder(Widget)
    with structlog.testing.capture_logs() as logs:
        for rv in ("7", "7", "7", "8"):  # three relists of one version, then a new version
            decoder.page(orjson.dumps({"items": [poison("wrong-enum", rv=rv)]}))
    lines = [entry for entry in logs if entry["event"].startswith("object does not decode")]
    assert [(e["resource_version"], e["path"]) for e in lines] == [
        ("7", "$.spec.mode"), ("8", "$.spec.mode")]


def _run(factory: SharedInformerFactory) -> Callable[[], None]:
    stop = threading.Event()
    factory.start(stop)

    def end() -> None:
        stop.set()
        factory.shutdown()

    return end


class _Queue:
    def __init__(self) -> None:
        self.added: list[Request] = []

    def add(self, item: Request) -> None:
        self.added.append(item)


def _reads_spec(obj: Any) -> bool:
    return bool(obj.spec.size >= 0)  # an AttributeError on a stand-in, if it were asked


def test_informer_caches_the_stand_in_and_a_fix_replaces_it() -> None:
    clock = FakeClock()
    client = FakeClient(clock)
    client.create(WIDGETS, widget("good"))
    client.create(WIDGETS, poison("wrong-enum", rv=""))
    factory = SharedInformerFactory(client, clock=clock)
    indexed: list[Any] = []

    def by_size(obj: Widget) -> list[str]:
        indexed.append(obj)
        return [str(obj.spec.size)]

    lister = factory.lister_for(Widget, indexers={"size": by_size})
    informer = factory.informer_for(Widget)
    queue = _Queue()
    spec_predicate = Predicate(add=_reads_spec, update=lambda o, n: _reads_spec(n))
    informer.add_event_handler(enqueue_object(queue, [spec_predicate]))
    registry = CollectorRegistry()
    registry.register(undecodable_collector(factory.undecodable))
    gauge = {"resource": "widgets.poison.test.pyctrl.io", "kind": "Widget"}
    end = _run(factory)
    try:
        assert factory.wait_for_cache_sync(threading.Event(), timeout=10)
        # The good one is cached and listed; the bad one is only a key that says why.
        assert [w.metadata.name for w in lister.list()] == ["good"]
        assert [w.metadata.name for w in lister.list("ns")] == ["good"]
        assert [w.metadata.name for w in lister.by_index("size", "0")] == ["good"]
        assert all(type(o) is Widget for o in indexed)  # index functions never see one
        with pytest.raises(Undecodable) as err:
            lister.get("ns", "bad")
        e = err.value
        assert isinstance(e, errors.Undecodable) and isinstance(e, errors.TerminalError)
        md = client.get(WIDGETS, "bad", "ns")["metadata"]
        assert (e.kind, e.namespace, e.name, e.uid, e.generation, e.resource_version) == (
            "Widget", "ns", "bad", md["uid"], md["generation"], md["resourceVersion"])
        assert e.path == "$.spec.mode" and e.field == "spec.mode"
        assert "Sometimes" in e.problem and "spec.mode" in str(e)
        # Its handler ran (the predicate that reads spec was not asked).
        eventually(lambda: Request("ns", "bad") in queue.added, what="the stand-in's event")
        assert registry.get_sample_value("pyctrl_informer_undecodable_objects", gauge) == 1
        # Fixed: the next event decodes and replaces the stand-in.
        stored = client.get(WIDGETS, "bad", "ns")
        client.update(WIDGETS, {**stored, "spec": {"owner": "me", "mode": "Slow"}}, "ns")
        eventually(lambda: _get_or_none(lister, "bad") is not None, what="the fix")
        assert lister.get("ns", "bad").spec.mode == "Slow"
        assert sorted(w.metadata.name for w in lister.by_index("size", "0")) == [
            "bad", "good"]
        assert registry.get_sample_value("pyctrl_informer_undecodable_objects", gauge) == 0
        # Broken again by a watched update, then deleted: events for each, no stand-in left.
        stored = client.get(WIDGETS, "bad", "ns")
        client.update(WIDGETS, {**stored, "spec": {"owner": "me", "size": "big"}}, "ns")
        eventually(lambda: _get_or_none(lister, "bad") is None, what="the watched poison")
        assert [w.metadata.name for w in lister.by_index("size", "0")] == ["good"]
        client.delete(WIDGETS, "bad", "ns")
        eventually(lambda: informer.get_indexer().quarantined == 0, what="the delete")
    finally:
        end()


def _get_or_none(lister: Any, name: str) -> Widget | None:
    try:
        got: Widget = lister.get("ns", name)
    except Undecodable:
        return None
    return got


def test_a_relist_over_the_fake_list_watch_keeps_the_stand_in_keyed() -> None:
    fake = FakeListWatch()
    fake.queue_list([widget("a", "1"), poison("out-of-range")], "5")
    lw = TypedListWatch(fake, Widget)
    page = lw.list(limit=None, continue_=None, resource_version="")
    assert [is_quarantined(o) for o in page["items"]] == [False, True]
    stream = fake.queue_watch()
    stream.modify(poison("wrong-type", rv="8")).modify(widget("bad", "9")).end()
    events = list(lw.watch(resource_version="5", timeout_seconds=60,
                           allow_watch_bookmarks=True))
    assert [is_quarantined(e["object"]) for e in events] == [True, False]


def test_the_synced_lister_raises_undecodable_too() -> None:
    client = FakeClient()
    client.create(WIDGETS, widget("good"))
    client.create(WIDGETS, poison("list-item-shape", rv=""))
    lister = synced_lister(client, Widget)
    assert [w.metadata.name for w in lister.list()] == ["good"]
    with pytest.raises(Undecodable, match=r"spec\.parts\[0\]") as err:
        lister.get("ns", "bad")
    assert (err.value.kind, err.value.uid) == (
        "Widget", client.get(WIDGETS, "bad", "ns")["metadata"]["uid"])
