"""WatchList: the Reflector's initial sync as a streaming list, and its fallbacks to LIST."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from structlog.testing import capture_logs

from pyctrl.cache import SharedInformerFactory
from pyctrl.cache.reflector import Reflector
from pyctrl.cache.watchlist import WatchListIncomplete, initial_events, rejects_watch_list
from pyctrl.errors import BadRequest, Forbidden, Gone, Invalid
from pyctrl.kube.interface import RawObject, WatchEvent
from pyctrl.kube.options import INITIAL_EVENTS_END_ANNOTATION
from pyctrl.kube.resource import CONFIGMAPS
from pyctrl.manager import Manager, ManagerOptions, MetricsOptions
from pyctrl.testing import FakeClient, FakeClock
from pyctrl.testing.fake_listwatch import FakeListWatch
from tests.unit.cache.helpers import RecordingStore, SleepRecordingClock, cm
from tests.unit.cache.test_reflector import running


def make(lw: Any, clock: FakeClock, store: Any = None) -> tuple[Reflector, RecordingStore]:
    store = store if store is not None else RecordingStore()
    refl = Reflector(lw, store, name="refl", clock=clock, page_size=2, backoff_jitter=0.0,
                     watch_list=True)
    return refl, store


def past_backoff(clock: SleepRecordingClock, check: Callable[[], bool] = lambda: True) -> None:
    """Wait for the reflector to back off, check ``check()`` then, and step past the wait."""
    assert clock.sleeps.wait_for(lambda ev: any(n == "refl-run" for n, _ in ev))
    assert check()
    clock.step(1.0)


def synced_after_backoff(lw: FakeListWatch, *, records: int) -> RecordingStore:
    """Run a reflector on ``lw`` past its first backoff until the store saw ``records``."""
    clock = SleepRecordingClock()
    refl, store = make(lw, clock)
    with running(refl):
        past_backoff(clock)
        assert store.wait_count(records)
    return store


def _end(rv: str) -> WatchEvent:
    return {"type": "BOOKMARK", "object": {"metadata": {
        "resourceVersion": rv, "annotations": {INITIAL_EVENTS_END_ANNOTATION: "true"}}}}


def test_initial_events_then_the_same_stream_goes_on_as_the_watch() -> None:
    lw = FakeListWatch()
    stream = lw.queue_watch()
    stream.add(cm("a", "3")).add(cm("b", "4")).initial_events_end("7")
    stream.modify(cm("a", "8"))
    refl, store = make(lw, FakeClock())
    with running(refl):
        assert store.wait_count(2)
        assert stream.wait_processed()
        assert refl.last_sync_resource_version() == "8"
    assert store.snapshot() == [("replace", ["a", "b"], "7"), ("update", "a")]
    assert lw.list_calls == []
    assert len(lw.watch_calls) == 1  # one request for the sync and the watch
    call = lw.watch_calls[0]
    assert (call["resource_version"], call["send_initial_events"]) == ("", True)
    assert 300 <= call["timeout_seconds"] <= 600


def test_a_store_with_stream_initial_gets_batches_as_they_arrive() -> None:
    streamed: list[list[str]] = []

    class StreamingStore(RecordingStore):
        def stream_initial(self, objs: list[RawObject]) -> bool:
            streamed.append([o["metadata"]["name"] for o in objs])
            return True

    lw = FakeListWatch()
    stream = lw.queue_watch()
    for name in "abcde":
        stream.add(cm(name))
    refl, store = make(lw, FakeClock(), StreamingStore())
    with running(refl):
        assert stream.wait_processed()
        assert streamed == [["a", "b"], ["c", "d"]]  # page_size batches, before the end
        stream.initial_events_end("9")
        assert store.wait_count(1)
    assert streamed[-1] == ["e"]
    assert store.snapshot()[0] == ("replace", list("abcde"), "9")


@pytest.mark.parametrize("err", [
    Invalid('ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: '
            "sendInitialEvents is forbidden for watch unless the WatchList feature gate is "
            "enabled", 422, "Invalid"),
    BadRequest("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch",
               400, "BadRequest"),
])
def test_a_server_refusing_watch_list_gets_paged_lists_from_then_on(err: Exception) -> None:
    lw = FakeListWatch()
    lw.queue_watch_error(err)  # type: ignore[arg-type]
    lw.queue_list([cm("a", "5")], "10")
    lw.queue_watch().add(cm("b", "11")).error_gone()
    lw.queue_list([cm("a", "5")], "12")
    clock = SleepRecordingClock()
    refl, store = make(lw, clock)
    with capture_logs() as logs, running(refl):
        assert lw.wait_for_watch_calls(2)
        past_backoff(clock)  # the relist is a LIST too
        assert lw.wait_for_watch_calls(3)
    assert [c.get("send_initial_events", False) for c in lw.watch_calls] == [True, False, False]
    assert [c["resource_version"] for c in lw.list_calls] == ["", "11"]
    assert store.snapshot()[0] == ("replace", ["a"], "10")
    off = [e for e in logs if e["event"].startswith("watch-list not supported")]
    assert len(off) == 1 and str(err) == off[0]["reason"]


def test_an_ordinary_bookmark_first_means_the_server_ignores_it() -> None:
    lw = FakeListWatch()
    lw.queue_watch().add(cm("a", "3")).bookmark("5")  # an old server's synthetic adds
    lw.queue_list([cm("a", "3")], "6")
    refl, store = make(lw, FakeClock())
    with running(refl):
        assert lw.wait_for_watch_calls(2)
        assert lw.streams[0].closed
    assert store.snapshot()[0] == ("replace", ["a"], "6")
    assert lw.watch_calls[1]["resource_version"] == "6"
    assert "send_initial_events" not in lw.watch_calls[1]


def test_a_lister_without_watch_list_is_listed() -> None:
    class PlainListWatch(FakeListWatch):
        watch_list = None  # type: ignore[assignment]

    lw = PlainListWatch()
    lw.queue_list([], "4")
    refl, store = make(lw, FakeClock())
    with running(refl):
        assert lw.wait_for_watch_calls(1)
    assert store.snapshot()[0] == ("replace", [], "4")


def test_a_stream_ending_before_the_bookmark_is_retried_as_a_watch_list() -> None:
    lw = FakeListWatch()
    lw.queue_watch().add(cm("a")).end()
    lw.queue_watch().add(cm("a")).initial_events_end("3")
    clock = SleepRecordingClock()
    refl, store = make(lw, clock)
    with running(refl):
        past_backoff(clock, check=lambda: store.snapshot() == [])  # nothing replaced
        assert store.wait_count(1)
    assert store.snapshot()[0] == ("replace", ["a"], "3")
    assert [c["send_initial_events"] for c in lw.watch_calls[:2]] == [True, True]
    assert lw.list_calls == []


def test_410_on_a_relist_version_retries_at_once_with_a_consistent_read() -> None:
    lw = FakeListWatch()
    lw.queue_watch().add(cm("a", "3")).initial_events_end("5").add(cm("b", "6")).error_gone()
    lw.queue_watch_error(Gone("too old resource version", 410, "Expired"))
    lw.queue_watch().initial_events_end("20")
    store = synced_after_backoff(lw, records=3)
    assert [c["resource_version"] for c in lw.watch_calls[:3]] == ["", "6", ""]
    assert store.snapshot()[-1] == ("replace", [], "20")


def test_other_open_errors_back_off_and_keep_watch_list() -> None:
    lw = FakeListWatch()
    lw.queue_watch_error(Forbidden("no", 403, "Forbidden"))
    lw.queue_watch().initial_events_end("2")
    synced_after_backoff(lw, records=1)
    assert [c["send_initial_events"] for c in lw.watch_calls[:2]] == [True, True]


def test_initial_events_applies_modifies_and_deletes_and_stops_streaming() -> None:
    handed: list[list[str]] = []

    def take(objs: list[RawObject]) -> bool:
        handed.append([o["metadata"]["name"] for o in objs])
        return True

    events: list[WatchEvent] = [
        {"type": "ADDED", "object": cm("a")}, {"type": "ADDED", "object": cm("b")},
        {"type": "ADDED", "object": cm("c")}, {"type": "MODIFIED", "object": cm("a", "9")},
        {"type": "DELETED", "object": cm("b")}, {"type": "ADDED", "object": cm("d")},
        _end("10")]
    result = initial_events(iter(events), transform=None, stream_to=take, batch_size=2)
    assert result is not None
    objs, rv = result
    assert rv == "10"
    assert [(o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in objs] == [
        ("a", "9"), ("c", "1"), ("d", "1")]
    assert handed == [["a", "b"]]  # the batch after the MODIFIED was never handed over


def test_initial_events_errors() -> None:
    with pytest.raises(WatchListIncomplete):
        initial_events(iter([{"type": "ADDED", "object": cm("a")}]), transform=None,
                       stream_to=None, batch_size=1)
    with pytest.raises(Gone):
        initial_events(iter([{"type": "ERROR", "object": {
            "kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}}]),
            transform=None, stream_to=None, batch_size=1)
    assert not rejects_watch_list(Invalid("name: Invalid value", 422, "Invalid"))
    assert not rejects_watch_list(Gone("sendInitialEvents", 410, "Expired"))


def test_factory_watch_list_syncs_through_the_client_without_a_list() -> None:
    clock = FakeClock()
    client = FakeClient(clock)
    client.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}})
    factory = SharedInformerFactory(client, clock=clock, watch_list=True)
    lister = factory.lister_for(CONFIGMAPS, metadata_only=True)
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(stop, timeout=10)
        assert lister.get("ns", "a")["kind"] == "ConfigMap"
    finally:
        stop.set()
        factory.shutdown()
    assert [a.verb for a in client.actions if a.verb in ("list", "watch")] == ["watch"]
    watch = next(a for a in client.actions if a.verb == "watch")
    assert watch.options["send_initial_events"] and watch.options["metadata_only"]


def test_manager_and_controller_watch_list_option() -> None:
    from cronjob_controller.__main__ import build_parser

    assert build_parser().parse_args([]).watch_list is False
    assert build_parser().parse_args(["--watch-list"]).watch_list is True
    clock = FakeClock()
    client = FakeClient(clock)
    client.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "ns"}})
    manager = Manager(client, ManagerOptions(metrics=MetricsOptions(runtime_metrics=False),
                                             watch_list=True), clock=clock)
    informer = manager.informers.informer_for(CONFIGMAPS)
    stop = threading.Event()
    manager.informers.start(stop)
    try:
        assert manager.informers.wait_for_cache_sync(stop, timeout=10)
    finally:
        stop.set()
        manager.informers.shutdown()
    assert informer.get_store().get_by_key("ns/a") is not None
    assert [a.verb for a in client.actions if a.verb in ("list", "watch")] == ["watch"]
