"""LeaderElector and LeaderElectionOptions against FakeLock and FakeClock."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from prometheus_client import CollectorRegistry

from pyctrl.errors import ServerError
from pyctrl.leaderelection import (
    LeaderCallbacks,
    LeaderElectionOptions,
    LeaderElectionRecord,
    LeaderElector,
)
from pyctrl.testing.fake_clock import FakeClock
from pyctrl.testing.fake_lock import FakeLock, FakeLockStore
from tests.threads import Runner
from tests.unit.runtime.helpers import step_until
from tests.waiting import eventually


@dataclass
class Probe:
    """Records callback invocations in order."""

    calls: list[str] = field(default_factory=list)
    leaders: list[str] = field(default_factory=list)
    leading_stop: threading.Event | None = None
    started: threading.Event = field(default_factory=threading.Event)
    stopped: threading.Event = field(default_factory=threading.Event)
    stopped_hook: Callable[[], None] | None = None

    def callbacks(self) -> LeaderCallbacks:
        def started(stop: threading.Event) -> None:
            self.leading_stop = stop
            self.calls.append("started")
            self.started.set()
            stop.wait()
            self.calls.append("workers-done")

        def stopped() -> None:
            if self.stopped_hook is not None:
                self.stopped_hook()
            self.calls.append("stopped")
            self.stopped.set()

        return LeaderCallbacks(started, stopped, self.leaders.append)


class Candidate:
    def __init__(self, store: FakeLockStore, clock: FakeClock, identity: str,
                 registry: CollectorRegistry | None = None, *, release: bool = True,
                 regain: bool = False) -> None:
        self.lock = FakeLock(store, identity)
        self.config = LeaderElectionOptions(
            lock=self.lock, lease_duration=15, renew_deadline=10, retry_period=2, jitter_factor=1.0,
            id="test", release_on_cancel=release, regain_after_fence=regain,
        )
        self.probe = Probe()
        self.elector = LeaderElector(self.config, self.probe.callbacks(), clock=clock,
                                     registry=registry)
        self.runner = Runner(self.elector.run, name=f"elector-{identity}", join_timeout=5)
        self.stop, self.thread = self.runner.stop, self.runner.thread

    def start(self) -> Candidate:
        self.runner.start()
        return self

    def shutdown(self) -> None:
        self.runner.shutdown()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store() -> FakeLockStore:
    return FakeLockStore()


@pytest.fixture
def cands() -> Iterator[list[Candidate]]:
    made: list[Candidate] = []
    yield made
    for c in made:
        c.lock.store.unblock()
        c.lock.store.fail_with = None
        if c.thread.is_alive():
            c.shutdown()


def _leading_parked(clock: FakeClock) -> None:
    # The renew loop sleeps and the watchdog waits: two waiters on the clock.
    assert clock.wait_for_waiters(2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lease_duration": 10, "renew_deadline": 10}, "lease_duration"),
        ({"renew_deadline": 2.4, "retry_period": 2}, "jitter_factor"),
        ({"retry_period": 0}, "retry_period"),
        ({"jitter_factor": 0.5}, "jitter_factor"),
        ({"lease_duration": -1}, "lease_duration"),
    ],
)
def test_config_rejects_unsafe_timings(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LeaderElectionOptions(lock=FakeLock(FakeLockStore(), "a"), **kwargs)  # type: ignore[arg-type]


def test_config_rejects_empty_identity() -> None:
    with pytest.raises(ValueError, match="identity"):
        LeaderElectionOptions(lock=FakeLock(FakeLockStore(), ""))


def test_acquires_free_lock_and_reports_metric(
    clock: FakeClock, store: FakeLockStore, cands: list[Candidate]
) -> None:
    registry = CollectorRegistry()
    c = Candidate(store, clock, "a", registry)
    cands.append(c.start())
    assert c.probe.started.wait(5)
    assert c.elector.is_leader()
    assert c.elector.get_leader() == "a"
    assert store.holder() == "a"
    assert c.probe.leaders == ["a"]
    assert registry.get_sample_value("leader_election_master_status", {"name": "test"}) == 1
    assert c.elector.check() is None
    c.shutdown()
    assert registry.get_sample_value("leader_election_master_status", {"name": "test"}) == 0


def test_renews_every_retry_period(
    clock: FakeClock, store: FakeLockStore, cands: list[Candidate]
) -> None:
    c = Candidate(store, clock, "a")
    cands.append(c.start())
    assert c.probe.started.wait(5)
    first = store.record
    assert first is not None and first.renew_time is not None
    for i in range(3):
        _leading_parked(clock)
        writes = len(store.history)
        clock.step(2)
        eventually(lambda: len(store.history) > writes, what=f"renew {i}")  # noqa: B023
    last = store.record
    assert last is not None and last.renew_time is not None
    assert (last.renew_time - first.renew_time).total_seconds() == 6
    assert last.acquire_time == first.acquire_time
    assert last.leader_transitions == 0
    assert c.elector.is_leader()


def test_steps_down_before_lease_expires_when_renew_fails(
    clock: FakeClock, store: FakeLockStore, cands: list[Candidate]
) -> None:
    c = Candidate(store, clock, "a")
    cands.append(c.start())
    assert c.probe.started.wait(5)
    last_ok = clock.monotonic()
    store.fail_with = ServerError("etcd unavailable", 500)
    stepped_down_at: list[float] = []
    c.probe.stopped_hook = lambda: stepped_down_at.append(clock.monotonic())
    for attempt in range(5):
        assert not c.probe.stopped.is_set(), f"stepped down early, attempt {attempt}"
        _leading_parked(clock)
        calls = store.calls
        clock.step(2)  # one failing renew attempt per retry period
        eventually(lambda: store.calls > calls or c.probe.stopped.is_set(),  # noqa: B023
                   what="renew attempted or stepped down")
    assert c.probe.stopped.wait(5)
    elapsed = stepped_down_at[0] - last_ok
    assert 10 <= elapsed < c.config.lease_duration
    assert c.probe.leading_stop is not None and c.probe.leading_stop.is_set()
    assert not c.elector.is_leader()
    assert c.probe.calls.count("stopped") == 1
    clock.step(2)  # run() notices at its next retry tick and returns
    c.thread.join(5)
    assert not c.thread.is_alive(), "run returns after losing the lease"
    assert store.holder() == "a", "a lost lease is not released (we could not write anyway)"


def test_steps_down_even_when_renew_call_hangs(
    clock: FakeClock, store: FakeLockStore, cands: list[Candidate]
) -> None:
    c = Candidate(store, clock, "a")
    cands.append(c.start())
    assert c.probe.started.wait(5)
    store.block()
    _leading_parked(clock)
    clock.step(2)  # the renew attempt now hangs inside the lock
    eventually(lambda: store.calls >= 0 and clock.waiters() == 1, what="renewer blocked")
    clock.step(8)
    assert c.probe.stopped.wait(5)
    assert not c.elector.is_leader()
    # Stuck past deadline + tolerance: the health check reports it.
    assert c.elector.check() is None
    clock.step(21)
    message = c.elector.check()
    assert message is not None and "overdue" in message
    store.unblock()
    c.thread.join(5)
    assert not c.thread.is_alive()
    assert c.elector.check() is None


def test_clean_stop_waits_for_workers_then_releases(
    clock: FakeClock, store: FakeLockStore, cands: list[Candidate]
) -> None:
    c = Candidate(store, clock, "a")
    cands.append(c.start())
    assert c.probe.started.wait(5)
    c.shutdown()
    assert c.probe.calls == ["started", "workers-done", "stopped"]
    released = store.record
    assert released is not None
    assert released.holder_identity == ""
    assert released.lease_duration_seconds == 1


def test_standby_takes_over_only_after_lease_expires_by_its_own_observation(
    clock: FakeClock, store: FakeLockStore, cands: list[Candidate]
) -> None:
    a = Candidate(store, clock, "a", release=False)
    cands.append(a.start())
    assert a.probe.started.wait(5)
    b = Candidate(store, clock, "b")
    cands.append(b.start())
    eventually(lambda: b.probe.leaders == ["a"], what="b observes a")
    a.shutdown()  # no release: b must wait out the lease
    assert store.holder() == "a"
    observed_at = clock.monotonic()
    while not b.probe.started.is_set():
        assert clock.wait_for_waiters(1)
        clock.step(2)
        eventually(lambda: clock.waiters() >= 1 or b.probe.started.is_set())
    assert clock.monotonic() - observed_at >= 15
    assert store.holder() == "b"
    assert b.probe.leaders == ["a", "b"]
    record = store.record
    assert record is not None and record.leader_transitions == 1


def test_standby_takes_over_within_one_retry_after_release(
    clock: FakeClock, store: FakeLockStore, cands: list[Candidate]
) -> None:
    a = Candidate(store, clock, "a")
    cands.append(a.start())
    assert a.probe.started.wait(5)
    b = Candidate(store, clock, "b")
    cands.append(b.start())
    eventually(lambda: b.probe.leaders == ["a"], what="b observes a")
    a.shutdown()
    assert store.holder() == ""
    assert clock.wait_for_waiters(1)
    clock.step(2)
    assert b.probe.started.wait(5)
    assert store.holder() == "b"


def test_only_one_of_several_candidates_leads(
    clock: FakeClock, store: FakeLockStore, cands: list[Candidate]
) -> None:
    group = [Candidate(store, clock, name) for name in "abc"]
    for c in group:
        cands.append(c.start())
    eventually(lambda: sum(c.probe.started.is_set() for c in group) == 1, what="one leader")
    for _ in range(5):
        clock.step(2)
        eventually(lambda: clock.waiters() >= 4)
        assert sum(c.elector.is_leader() for c in group) == 1


def test_a_candidate_fed_by_a_watch_retries_right_at_the_observed_expiry(
    clock: FakeClock, store: FakeLockStore, cands: list[Candidate]
) -> None:
    """observe() records when the holder renewed as the watch saw it (+1.5 s), and the
    campaign's retry lands on that expiry (+16.5 s) off its 2 s grid. Polling alone would
    have seen the renewal at its next retry (+2 s) and taken over at +17 s or later; without
    the cap the retry after +16 s comes at +18 s."""
    start = clock.monotonic()
    store.record = LeaderElectionRecord("a", 15, clock.now(), clock.now())
    b = Candidate(store, clock, "b")
    cands.append(b.start())
    eventually(lambda: b.probe.leaders == ["a"], what="b observes a")
    assert clock.wait_for_waiters(1)
    clock.step(1.5)
    renewed = LeaderElectionRecord("a", 15, store.record.acquire_time, clock.now())
    store.record = renewed  # a renews at +1.5 s, the last time: then it dies
    b.elector.observe(renewed)  # ... and b's Lease watch delivers it at once
    for at in (2, 4, 6, 8, 10, 12, 14, 16, 16.499):
        assert clock.wait_for_waiters(1)
        clock.step(start + at - clock.monotonic())
    assert store.holder() == "a"
    assert clock.wait_for_waiters(1)
    clock.step(start + 16.52 - clock.monotonic())
    eventually(lambda: store.holder() == "b", timeout=2, what="b acquires at the expiry")


def test_observe_ignores_records_while_leading(
    clock: FakeClock, store: FakeLockStore, cands: list[Candidate]
) -> None:
    a = Candidate(store, clock, "a")
    cands.append(a.start())
    assert a.probe.started.wait(5)
    a.elector.observe(LeaderElectionRecord("x", 15, clock.now(), clock.now()))
    assert a.elector.get_leader() == "a"


def test_regain_after_fence_takes_the_lease_back_when_it_still_names_us(
    clock: FakeClock, store: FakeLockStore, cands: list[Candidate]
) -> None:
    leader = Candidate(store, clock, "a", regain=True).start()
    cands.append(leader)
    assert leader.probe.started.wait(5)
    store.fail_with = ServerError("apiserver down", 503)
    step_until(clock, lambda: not leader.elector.holds_lease(), what="fenced")
    assert not leader.probe.stopped.is_set(), "fenced, but still leading: no step-down"
    assert leader.probe.leading_stop is not None and not leader.probe.leading_stop.is_set()
    store.fail_with = None
    step_until(clock, leader.elector.holds_lease, what="regained")
    assert store.holder() == "a"
    assert not leader.probe.stopped.is_set()
    clock.step(30)  # renewing as before: the watchdog is armed again
    step_until(clock, leader.elector.holds_lease, what="renewing")


def test_regain_after_fence_steps_down_once_another_holder_is_seen(
    clock: FakeClock, store: FakeLockStore, cands: list[Candidate]
) -> None:
    leader = Candidate(store, clock, "a", regain=True).start()
    cands.append(leader)
    assert leader.probe.started.wait(5)
    store.fail_with = ServerError("apiserver down", 503)
    step_until(clock, lambda: not leader.elector.holds_lease(), what="fenced")
    now = clock.now()
    store.record = LeaderElectionRecord("b", 15, now, now)  # b took over meanwhile
    store.version += 1
    store.fail_with = None
    step_until(clock, leader.probe.stopped.is_set, what="stepped down")
    leader.thread.join(5)
    assert not leader.thread.is_alive(), "the campaign ended"
    assert store.holder() == "b", "nothing written over the new holder"
    assert leader.probe.calls[-1] == "stopped"
