"""EventBroadcaster/EventRecorder against FakeClient: non-blocking, dedup, aggregation, spam."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pyctrl.errors import ServerError
from pyctrl.kube.resource import EVENTS
from pyctrl.record import COMBINED_PREFIX, EventBroadcaster
from pyctrl.testing.fake_client import Action, FakeClient
from pyctrl.testing.fake_clock import FakeClock
from pyctrl.testing.fake_recorder import FakeRecorder
from tests.waiting import eventually

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-1", "namespace": "ns1", "uid": "u-1", "resourceVersion": "7"},
}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def client(clock: FakeClock) -> FakeClient:
    return FakeClient(clock)


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def broadcaster(
    client: FakeClient, clock: FakeClock, registry: CollectorRegistry
) -> Iterator[EventBroadcaster]:
    b = EventBroadcaster(client, component="test-ctrl", host="node-a", clock=clock,
                         registry=registry, queue_size=10, retry_backoff=0.0)
    yield b
    b.shutdown()


def _dropped(registry: CollectorRegistry, reason: str) -> float:
    return registry.get_sample_value("pyctrl_events_dropped_total", {"reason": reason}) or 0.0


def _verbs(client: FakeClient) -> list[str]:
    return [a.verb for a in client.actions if a.resource == EVENTS]


def test_event_fields_follow_core_v1(client: FakeClient, broadcaster: EventBroadcaster) -> None:
    broadcaster.new_recorder().eventf(POD, "Normal", "Scheduled", "placed on %s", "node-b")
    assert broadcaster.wait_idle()
    [event] = client.list_objects(EVENTS, "ns1")
    assert event["involvedObject"] == {
        "apiVersion": "v1", "kind": "Pod", "name": "web-1", "namespace": "ns1", "uid": "u-1",
        "resourceVersion": "7",
    }
    assert event["source"] == {"component": "test-ctrl", "host": "node-a"}
    assert event["reportingComponent"] == "test-ctrl"
    assert event["message"] == "placed on node-b"
    assert event["type"] == "Normal" and event["count"] == 1
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-01-01T00:00:00Z"
    assert event["metadata"]["name"].startswith("web-1.")


def test_recording_never_blocks_and_counts_drops(
    client: FakeClient, broadcaster: EventBroadcaster, registry: CollectorRegistry
) -> None:
    entered, release = threading.Event(), threading.Event()

    def hang(action: Action) -> None:
        entered.set()
        release.wait(10)

    client.prepend_reactor("create", EVENTS, hang)
    rec = broadcaster.new_recorder()
    rec.event(POD, "Normal", "R", "first")
    assert entered.wait(5)  # the sink is stuck writing; the buffer (10) is empty
    for i in range(15):
        rec.event(POD, "Normal", "R", f"m{i}")  # returns at once even though the sink hangs
    assert _dropped(registry, "queue_full") == 5
    release.set()
    assert broadcaster.wait_idle()


def test_identical_events_patch_one_event_with_rising_count(
    client: FakeClient, broadcaster: EventBroadcaster, clock: FakeClock
) -> None:
    rec = broadcaster.new_recorder()
    for _ in range(3):
        rec.event(POD, "Warning", "BackOff", "restarting")
        assert broadcaster.wait_idle()
        clock.step(1)
    [event] = client.list_objects(EVENTS, "ns1")
    assert event["count"] == 3
    assert event["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert event["lastTimestamp"] == "2026-01-01T00:00:02Z"
    assert _verbs(client) == ["create", "patch", "patch"]


def test_patch_of_a_vanished_event_creates_it_again(
    client: FakeClient, broadcaster: EventBroadcaster
) -> None:
    rec = broadcaster.new_recorder()
    rec.event(POD, "Normal", "Synced", "ok")
    assert broadcaster.wait_idle()
    [event] = client.list_objects(EVENTS, "ns1")
    client.delete(EVENTS, event["metadata"]["name"], "ns1")
    rec.event(POD, "Normal", "Synced", "ok")
    assert broadcaster.wait_idle()
    [again] = client.list_objects(EVENTS, "ns1")
    assert again["count"] == 2
    assert _verbs(client)[-2:] == ["patch", "create"]


def test_similar_events_are_combined_after_ten_messages(
    client: FakeClient, broadcaster: EventBroadcaster
) -> None:
    rec = broadcaster.new_recorder()
    for i in range(12):
        rec.event(POD, "Warning", "FailedMount", f"volume {i} missing")
        assert broadcaster.wait_idle()
    events = client.list_objects(EVENTS, "ns1")
    combined = [e for e in events if e["message"].startswith(COMBINED_PREFIX)]
    assert len(events) == 10  # 9 individual messages + one combined event
    assert len(combined) == 1
    assert combined[0]["count"] == 3
    assert combined[0]["message"] == COMBINED_PREFIX + "volume 11 missing"


def test_spam_filter_limits_each_object_to_its_burst(
    client: FakeClient, broadcaster: EventBroadcaster, registry: CollectorRegistry,
    clock: FakeClock,
) -> None:
    rec = broadcaster.new_recorder()
    other = {**POD, "metadata": {**POD["metadata"], "name": "web-2", "uid": "u-2"}}
    for i in range(30):
        rec.event(POD, "Normal", f"Reason{i}", "x")
        assert broadcaster.wait_idle()
    rec.event(other, "Normal", "Reason", "x")  # another object has its own bucket
    assert broadcaster.wait_idle()
    assert _dropped(registry, "spam") == 5
    assert len(client.list_objects(EVENTS, "ns1")) == 26
    clock.step(300)  # one token back
    rec.event(POD, "Normal", "Late", "x")
    rec.event(POD, "Normal", "Later", "x")
    assert broadcaster.wait_idle()
    assert _dropped(registry, "spam") == 6


def test_server_errors_are_retried(client: FakeClient, broadcaster: EventBroadcaster) -> None:
    failures = [ServerError("etcd leader changed", 500)]

    def flaky(action: Action) -> None:
        if failures:
            raise failures.pop()

    client.prepend_reactor("create", EVENTS, flaky)
    broadcaster.new_recorder().event(POD, "Normal", "Synced", "ok")
    assert broadcaster.wait_idle()
    assert len(client.list_objects(EVENTS, "ns1")) == 1


def test_shutdown_flushes_then_drops_later_events(
    client: FakeClient, clock: FakeClock, registry: CollectorRegistry
) -> None:
    b = EventBroadcaster(client, component="c", clock=clock, registry=registry)
    rec = b.new_recorder()
    for i in range(5):
        rec.event(POD, "Normal", f"R{i}", "m")
    b.shutdown()
    assert len(client.list_objects(EVENTS, "ns1")) == 5
    rec.event(POD, "Normal", "After", "m")
    assert _dropped(registry, "shutdown") == 1


def test_invalid_type_and_malformed_objects_are_dropped_without_raising(
    client: FakeClient, broadcaster: EventBroadcaster
) -> None:
    rec = broadcaster.new_recorder()
    rec.event(POD, "Bogus", "R", "m")  # type: ignore[arg-type]
    rec.event({"metadata": None}, "Normal", "R", "m")
    assert broadcaster.wait_idle()
    assert all(e["involvedObject"].get("name") != "web-1"
               for e in client.list_objects(EVENTS, "ns1"))


def test_fake_recorder_collects_events() -> None:
    rec = FakeRecorder()
    rec.eventf(POD, "Warning", "ErrResourceExists", "Resource %r exists", "d")
    assert rec.events == ["Warning ErrResourceExists Resource 'd' exists"]
    assert rec.records[0].key == "ns1/web-1"


def test_events_wait_while_critical_work_is_pending(
    client: FakeClient, broadcaster: EventBroadcaster
) -> None:
    busy = threading.Event()
    busy.set()
    asked = threading.Event()

    def pending() -> bool:
        asked.set()
        return busy.is_set()

    broadcaster.set_defer_while(pending, max_defer=60.0)
    broadcaster.new_recorder().event(POD, "Normal", "Created", "made it")
    assert asked.wait(5)
    assert not broadcaster.wait_idle(0.2)  # held back: nothing written yet
    assert _verbs(client) == []
    busy.clear()
    assert broadcaster.wait_idle()
    assert _verbs(client) == ["create"]


def _write_times(client: FakeClient, clock: FakeClock) -> list[float]:
    """A fake sink: the Clock's monotonic time of every Event create, in order."""
    times: list[float] = []
    mu = threading.Lock()

    def record(action: Action) -> None:
        with mu:
            times.append(clock.monotonic())

    client.prepend_reactor("create", EVENTS, record)
    return times


class _Asked:
    """Counts calls of the always-true defer predicate, so a test can wait for the sink to
    have decided (twice, so the first decision's write, if any, is recorded) to defer."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.calls = 0

    def ask(self) -> bool:
        with self._cond:
            self.calls += 1
            self._cond.notify_all()
        return True

    def wait(self, more: int = 1, timeout: float = 5.0) -> bool:
        with self._cond:
            target = self.calls + more
            return self._cond.wait_for(lambda: self.calls >= target, timeout)


def _deferring_forever(broadcaster: EventBroadcaster, *, max_defer: float,
                       min_rate: float) -> _Asked:
    asked = _Asked()
    always_busy = asked.ask

    broadcaster.set_defer_while(always_busy, max_defer=max_defer, min_rate=min_rate)
    return asked


def test_events_flow_at_the_floor_rate_and_none_waits_past_max_age_under_constant_load(
    client: FakeClient, clock: FakeClock, registry: CollectorRegistry
) -> None:
    b = EventBroadcaster(client, component="test-ctrl", clock=clock, registry=registry,
                         queue_size=100, retry_backoff=0.0)
    try:
        writes = _write_times(client, clock)
        asked = _deferring_forever(b, max_defer=10.0, min_rate=2.0)
        recorded_at = clock.monotonic()
        recorder = b.new_recorder()
        for i in range(50):  # distinct objects: no aggregation, no spam filter
            obj = {**POD, "metadata": {**POD["metadata"], "name": f"web-{i}", "uid": f"u-{i}"}}
            recorder.event(obj, "Normal", "Created", "made it")
        assert asked.wait(), "the sink asked the predicate: deferral began at t0"
        for second in range(1, 10):
            clock.step(1)
            eventually(lambda s=second: len(writes) >= 2 * s,  # type: ignore[misc]
                       what=f"floor rate: 2 events/s after {second}s")
            assert asked.wait(2)
            assert len(writes) == 2 * second, "still deferring beyond the floor"
        clock.step(1)  # every event has now waited max_defer: all go out
        eventually(lambda: len(writes) == 50, what="events past max age written")
        assert b.wait_idle()
        waits = [t - recorded_at for t in writes]
        assert max(waits) <= 10.0
        assert waits.count(10.0) == 50 - 18
    finally:
        b.shutdown()
    assert _dropped(registry, "shutdown") == 0


def test_max_age_is_per_event_not_per_deferral(
    client: FakeClient, clock: FakeClock, broadcaster: EventBroadcaster
) -> None:
    writes = _write_times(client, clock)
    asked = _deferring_forever(broadcaster, max_defer=10.0, min_rate=0.0)  # no floor
    recorder = broadcaster.new_recorder()
    recorder.event(POD, "Normal", "First", "a")
    assert asked.wait()
    clock.step(6)
    other = {**POD, "metadata": {**POD["metadata"], "name": "web-2", "uid": "u-2"}}
    recorder.event(other, "Normal", "Second", "b")
    clock.step(4)  # the first is 10 s old, the second 4 s
    eventually(lambda: len(writes) == 1, what="first event written at its max age")
    clock.step(5)
    assert asked.wait(2)
    assert len(writes) == 1, "the second is only 9 s old"
    clock.step(1)
    eventually(lambda: len(writes) == 2, what="second event written at its max age")
    assert [round(t - writes[0], 6) for t in writes] == [0.0, 6.0]


def test_deferral_settings_are_validated(broadcaster: EventBroadcaster) -> None:
    with pytest.raises(ValueError, match="max_defer"):
        broadcaster.set_defer_while(lambda: True, max_defer=0)
    with pytest.raises(ValueError, match="min_rate"):
        broadcaster.set_defer_while(lambda: True, min_rate=-1)
