"""Leader-scoped writes: FencedClient over FakeClient, fenced by a LeaderElector on a FakeLock.

The renews hang (``store.block()``: the API server stopped answering, or we were frozen) and
the FakeClock passes the renew deadline: every write is then refused with NotLeader before it
reaches the wrapped client, reads still work, a reconcile in flight stops at its next write,
and the event sink drops its events.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pyctrl import LeaderElectionOptions, ManagerOptions
from pyctrl.cache import RecordingClient
from pyctrl.controller import Controller
from pyctrl.errors import NotLeader
from pyctrl.kube import FencedClient
from pyctrl.kube.resource import CONFIGMAPS, EVENTS
from pyctrl.manager import Manager
from pyctrl.reconcile import Request, Result
from pyctrl.record import EventBroadcaster
from pyctrl.testing.fake_client import FakeClient
from pyctrl.testing.fake_clock import FakeClock
from pyctrl.testing.fake_lock import FakeLock, FakeLockStore
from tests.threads import running
from tests.unit.runtime.test_leaderelection import Candidate
from tests.waiting import eventually


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store() -> FakeLockStore:
    return FakeLockStore()


@pytest.fixture
def leader(clock: FakeClock, store: FakeLockStore) -> Iterator[Candidate]:
    c = Candidate(store, clock, "a").start()
    assert c.probe.started.wait(5)
    assert c.elector.holds_lease()
    yield c
    store.unblock()
    if c.thread.is_alive():
        c.shutdown()


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns"}, "data": {"k": "v"}}


def _lose_lease(clock: FakeClock, store: FakeLockStore, c: Candidate) -> None:
    """Renews hang from now on; the renew deadline passes without a successful renew."""
    store.block()
    clock.step(c.config.renew_deadline)


def test_writes_after_the_renew_deadline_are_refused_before_reaching_the_client(
    clock: FakeClock, store: FakeLockStore, leader: Candidate
) -> None:
    registry = CollectorRegistry()
    fake = FakeClient(clock)
    fenced = FencedClient(fake, leader.elector, registry=registry)
    fenced.create(CONFIGMAPS, _cm("before"), "ns")
    store.block()
    clock.step(leader.config.renew_deadline - 0.5)  # no renew since, still inside the deadline
    fenced.update(CONFIGMAPS, {**_cm("before"), "data": {"k": "w"}}, "ns")
    clock.step(0.5)
    assert not leader.elector.holds_lease()
    sent = len(fake.actions)
    with pytest.raises(NotLeader, match="refusing create configmaps ns/after"):
        fenced.create(CONFIGMAPS, _cm("after"), "ns")
    with pytest.raises(NotLeader):
        fenced.update(CONFIGMAPS, _cm("before"), "ns")
    with pytest.raises(NotLeader):
        fenced.update_status(CONFIGMAPS, _cm("before"), "ns")
    with pytest.raises(NotLeader):
        fenced.patch(CONFIGMAPS, "before", {"data": {"k": "x"}}, "ns")
    with pytest.raises(NotLeader):
        fenced.delete(CONFIGMAPS, "before", "ns")
    assert fake.actions[sent:] == [], "no refused write reached the client"
    assert fenced.get(CONFIGMAPS, "before", "ns")["data"] == {"k": "w"}, "reads still work"
    assert [a.verb for a in fake.actions[sent:]] == ["get"]
    assert registry.get_sample_value("pyctrl_leader_fenced_writes_total",
                                     {"verb": "create"}) == 1


def test_a_reconcile_in_flight_stops_at_its_next_write(
    clock: FakeClock, store: FakeLockStore, leader: Candidate
) -> None:
    fake = FakeClient(clock)
    fenced = FencedClient(fake, leader.elector)
    entered, release = threading.Event(), threading.Event()
    finished: list[Request] = []

    class TwoWrites:
        def reconcile(self, request: Request) -> Result | None:
            fenced.create(CONFIGMAPS, _cm("first"), "ns")
            entered.set()
            release.wait(5)
            fenced.create(CONFIGMAPS, _cm("second"), "ns")
            finished.append(request)
            return None

    registry = CollectorRegistry()
    controller = Controller("fenced", TwoWrites(), clock=clock, registry=registry)
    with running(controller.run, name="controller-fenced", join_timeout=5):
        controller.queue.add(Request("ns", "x"))
        assert entered.wait(5)
        _lose_lease(clock, store, leader)
        release.set()
        eventually(lambda: registry.get_sample_value(
            "controller_runtime_reconcile_errors_total", {"controller": "fenced"})
            == 1, what="the refused write ends the reconcile")
        assert finished == []
        assert [a.object["metadata"]["name"] for a in fake.actions if a.verb == "create"] == [
            "first"]
        # Kept for when the lease is renewed (or the process ends): no backoff spent on it,
        # and the gate holds the worker instead of retrying it hot.
        assert controller.queue.num_requeues(Request("ns", "x")) == 0
        assert registry.get_sample_value(
            "controller_runtime_terminal_reconcile_errors_total", {"controller": "fenced"}) == 0


def test_the_event_sink_drops_events_once_the_lease_is_lost(
    clock: FakeClock, store: FakeLockStore, leader: Candidate
) -> None:
    registry = CollectorRegistry()
    fake = FakeClient(clock)
    broadcaster = EventBroadcaster(FencedClient(fake, leader.elector), component="c",
                                   clock=clock, registry=registry)
    try:
        recorder = broadcaster.new_recorder()
        recorder.event(_cm("a"), "Normal", "Leading", "written")
        assert broadcaster.wait_idle()
        _lose_lease(clock, store, leader)
        recorder.event(_cm("b"), "Normal", "Deposed", "refused")
        assert broadcaster.wait_idle()
    finally:
        broadcaster.shutdown()
    assert [a.verb for a in fake.actions if a.resource == EVENTS] == ["create"]
    assert registry.get_sample_value("pyctrl_events_dropped_total",
                                     {"reason": "not_leader"}) == 1


def test_a_clean_stop_fences_writes_before_releasing(leader: Candidate) -> None:
    leader.shutdown()
    assert not leader.elector.holds_lease()


def test_manager_hands_out_a_fenced_client_only_with_leader_election(clock: FakeClock) -> None:
    fake = FakeClient(clock)
    plain = Manager(fake, clock=clock)
    recorded = plain.client_for_leader()  # its writes are read back (read-your-own-writes)
    assert isinstance(recorded, RecordingClient) and recorded.inner is fake
    elected = Manager(
        fake, ManagerOptions(leader_election=LeaderElectionOptions(
            id="m", lock=FakeLock(FakeLockStore(), "me"))), clock=clock)
    fenced = elected.client_for_leader()
    assert isinstance(fenced, FencedClient)
    with pytest.raises(NotLeader):  # not leading yet
        fenced.create(CONFIGMAPS, _cm("x"), "ns")
    assert fake.actions == []
