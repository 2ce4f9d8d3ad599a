"""SharedIndexInformer: handler ordering, isolation, late handlers, resync, transform,
tombstones, handler errors and the mutation detector."""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager

import pytest

from pyctrl.cache.index import NAMESPACE_INDEX, meta_namespace_index_func
from pyctrl.cache.informer import SharedIndexInformer
from pyctrl.cache.mutation import MUTATION_DETECTOR_ENV, CacheMutationError
from pyctrl.cache.processor import ResourceEventHandlerFuncs
from pyctrl.kube.interface import RawObject
from pyctrl.testing.fake_clock import FakeClock
from pyctrl.testing.fake_listwatch import FakeListWatch
from tests import threads
from tests.unit.cache.helpers import WAIT, Recorder, RecordingHandler, cm


def running(informer: SharedIndexInformer) -> AbstractContextManager[threading.Event]:
    return threads.running(informer.run, name="informer-run", join_timeout=WAIT)


def new_informer(lw: FakeListWatch, clock: FakeClock | None = None,
                 **kw: object) -> SharedIndexInformer:
    return SharedIndexInformer(lw, clock=clock or FakeClock(), name="test",
                               indexers={NAMESPACE_INDEX: meta_namespace_index_func},
                               **kw)  # type: ignore[arg-type]


def test_handler_sees_initial_adds_then_watch_events_in_order() -> None:
    lw = FakeListWatch()
    lw.queue_list([cm("a", "1"), cm("b", "2")], "10")
    stream = lw.queue_watch()
    inf = new_informer(lw)
    h = RecordingHandler()
    reg = inf.add_event_handler(h)
    with running(inf) as stop:
        assert inf.wait_for_sync(stop, WAIT)
        stream.add(cm("c", "11")).modify(cm("a", "12")).delete(cm("b", "13"))
        assert h.wait_count(5)
        assert reg.has_synced()
    assert h.snapshot() == [
        ("add", "a", True), ("add", "b", True), ("add", "c", False),
        ("update", "a", "1", "12", False), ("delete", "b", False)]
    assert sorted(inf.get_indexer().list_keys()) == ["default/a", "default/c"]
    assert inf.last_sync_resource_version() == "13"


def test_slow_handler_does_not_block_other_handlers_or_the_cache() -> None:
    lw = FakeListWatch()
    lw.queue_list([], "1")
    stream = lw.queue_watch()
    inf = new_informer(lw)
    gate = threading.Event()
    slow_seen = Recorder()

    def slow_add(obj: RawObject) -> None:
        gate.wait(WAIT)
        slow_seen.record(obj["metadata"]["name"])

    inf.add_event_handler(ResourceEventHandlerFuncs(add_func=slow_add))
    fast = RecordingHandler()
    inf.add_event_handler(fast)
    with running(inf) as stop:
        assert inf.wait_for_sync(stop, WAIT)
        for i in range(50):
            stream.add(cm(f"o{i}", str(i + 2)))
        assert fast.wait_count(50)  # while the slow handler is stuck on its first event
        assert len(inf.get_indexer().list()) == 50
        assert slow_seen.snapshot() == []
        gate.set()
        assert slow_seen.wait_count(50)
    assert [e[0] for e in slow_seen.snapshot()] == [f"o{i}" for i in range(50)]


def test_handler_exceptions_are_contained() -> None:
    lw = FakeListWatch()
    lw.queue_list([cm("a"), cm("b")], "1")
    lw.queue_watch()
    inf = new_informer(lw)
    seen = Recorder()

    def flaky(obj: RawObject) -> None:
        seen.record(obj["metadata"]["name"])
        raise RuntimeError("handler bug")

    inf.add_event_handler(ResourceEventHandlerFuncs(add_func=flaky))
    with running(inf):
        assert seen.wait_count(2)


def test_late_handler_gets_every_cached_object_as_add() -> None:
    lw = FakeListWatch()
    lw.queue_list([cm(f"o{i}") for i in range(20)], "1")
    stream = lw.queue_watch()
    inf = new_informer(lw)
    with running(inf) as stop:
        assert inf.wait_for_sync(stop, WAIT)
        late = RecordingHandler()
        reg = inf.add_event_handler(late)
        stream.add(cm("new", "2"))
        assert late.wait_count(21)
        assert reg.has_synced()
        events = late.snapshot()
    assert sorted(e[1] for e in events[:20]) == sorted(f"o{i}" for i in range(20))
    assert all(e[0] == "add" and e[2] is True for e in events[:20])
    assert events[20] == ("add", "new", False)


def test_registration_not_synced_until_its_initial_adds_are_handled() -> None:
    lw = FakeListWatch()
    lw.queue_list([cm("a")], "1")
    lw.queue_watch()
    inf = new_informer(lw)
    gate = threading.Event()
    done = Recorder()

    def blocked(obj: RawObject) -> None:
        gate.wait(WAIT)
        done.record(obj)

    reg = inf.add_event_handler(ResourceEventHandlerFuncs(add_func=blocked))
    with running(inf) as stop:
        assert inf.wait_for_sync(stop, WAIT)
        assert not reg.has_synced()
        gate.set()
        assert done.wait_count(1)
        assert done.wait_for(lambda _: reg.has_synced())


def test_resync_replays_cache_as_updates_without_api_calls() -> None:
    lw = FakeListWatch()
    lw.queue_list([cm("a", "1"), cm("b", "1")], "1")
    lw.queue_watch()
    clock = FakeClock()
    inf = new_informer(lw, clock)
    resyncing = RecordingHandler()
    quiet = RecordingHandler()
    inf.add_event_handler(resyncing, resync_period=30.0)
    inf.add_event_handler(quiet, resync_period=0)
    with running(inf) as stop:
        assert inf.wait_for_sync(stop, WAIT)
        assert resyncing.wait_count(2) and quiet.wait_count(2)
        assert clock.wait_for_waiters(2)  # the reflector's watchdog and the resync loop
        clock.step(30)
        assert resyncing.wait_count(4)
        assert quiet.snapshot() == [("add", "a", True), ("add", "b", True)]
    updates = resyncing.snapshot()[2:]
    assert sorted(u[1] for u in updates) == ["a", "b"]
    assert all(u[0] == "update" and u[4] is True for u in updates)  # old is new
    assert len(lw.list_calls) == 1


def test_relist_delivers_tombstones_for_objects_deleted_while_disconnected() -> None:
    lw = FakeListWatch()
    lw.queue_list([cm("a", "1"), cm("b", "1")], "1")
    lw.queue_watch().error_gone()
    lw.queue_list([cm("a", "1")], "5")
    clock = FakeClock()
    inf = new_informer(lw, clock)
    h = RecordingHandler()
    inf.add_event_handler(h, resync_period=0)
    with running(inf):
        assert lw.wait_for_list_calls(1)
        assert clock.wait_for_waiters(2)  # watchdog + backoff before relist
        clock.step(2)
        assert h.wait_count(3)
    assert h.snapshot()[2] == ("delete", "b", True)
    assert inf.get_indexer().list_keys() == ["default/a"]


def test_replaced_with_same_resource_version_is_not_a_real_update() -> None:
    lw = FakeListWatch()
    lw.queue_list([cm("a", "1")], "1")
    lw.queue_watch().error_gone()
    lw.queue_list([cm("a", "1"), cm("b", "4")], "5")
    clock = FakeClock()
    inf = new_informer(lw, clock)
    h = RecordingHandler()
    inf.add_event_handler(h, resync_period=0)
    with running(inf):
        assert clock.wait_for_waiters(2)
        clock.step(2)
        assert h.wait_count(2)
        assert lw.wait_for_watch_calls(2)
        assert inf.get_indexer().get_by_key("default/b") is not None
    # "a" came back unchanged: no update for a handler that is not resyncing.
    assert h.snapshot() == [("add", "a", True), ("add", "b", False)]


def test_default_transform_drops_managed_fields() -> None:
    lw = FakeListWatch()
    lw.queue_list([cm("a", metadata={"managedFields": [{"manager": "kubectl"}]})], "1")
    lw.queue_watch()
    inf = new_informer(lw)
    with running(inf) as stop:
        assert inf.wait_for_sync(stop, WAIT)
        obj = inf.lister().get("default", "a")
    assert "managedFields" not in obj["metadata"]


def test_mutation_detector_reports_in_place_changes() -> None:
    lw = FakeListWatch()
    lw.queue_list([cm("a")], "1")
    stream = lw.queue_watch()
    inf = new_informer(lw, detect_mutations=True)
    h = RecordingHandler()
    inf.add_event_handler(h)
    with running(inf) as stop:
        assert inf.wait_for_sync(stop, WAIT)
        detector = inf.mutation_detector
        assert detector is not None
        detector.compare_objects()  # clean so far
        inf.get_indexer().get_by_key("default/a")["data"]["k"] = "changed"  # type: ignore[index]
        with pytest.raises(CacheMutationError):
            detector.compare_objects()
        # Replacing the mutated object also reports it (without raising into the informer).
        stream.modify(cm("a", "2"))
        assert h.wait_count(2)
        assert inf.get_indexer().get_by_key("default/a")["metadata"]["resourceVersion"] == "2"  # type: ignore[index]
    assert detector.mutations.count("default/a") >= 2


def test_mutation_detector_enabled_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MUTATION_DETECTOR_ENV, "1")
    assert new_informer(FakeListWatch()).mutation_detector is not None
    monkeypatch.delenv(MUTATION_DETECTOR_ENV)
    assert new_informer(FakeListWatch()).mutation_detector is None


def test_removed_handler_stops_receiving() -> None:
    lw = FakeListWatch()
    lw.queue_list([], "1")
    stream = lw.queue_watch()
    inf = new_informer(lw)
    removed = RecordingHandler()
    kept = RecordingHandler()
    reg = inf.add_event_handler(removed)
    inf.add_event_handler(kept)
    with running(inf) as stop:
        assert inf.wait_for_sync(stop, WAIT)
        stream.add(cm("a", "2"))
        assert removed.wait_count(1) and kept.wait_count(1)
        inf.remove_event_handler(reg)
        stream.add(cm("b", "3"))
        assert kept.wait_count(2)
        assert stream.wait_processed()
    assert removed.snapshot() == [("add", "a", False)]


def test_add_indexers_after_start_is_rejected_and_run_twice_fails() -> None:
    lw = FakeListWatch()
    lw.queue_list([], "1")
    lw.queue_watch()
    inf = new_informer(lw)
    with running(inf) as stop:
        assert inf.wait_for_sync(stop, WAIT)
        with pytest.raises(RuntimeError):
            inf.add_indexers({"x": meta_namespace_index_func})
        with pytest.raises(RuntimeError):
            inf.run(stop)
