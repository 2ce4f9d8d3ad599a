"""Manager.add: runnables start with the manager (or while leading), are joined on shutdown,
and one that dies fails /healthz."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from pyctrl.leaderelection import LeaderElectionRecord
from pyctrl.manager import HealthOptions, LeaderElectionOptions, Manager, ManagerOptions
from pyctrl.testing.fake_client import FakeClient
from pyctrl.testing.fake_clock import FakeClock
from pyctrl.testing.fake_lock import FakeLock, FakeLockStore
from tests.threads import Runner, start_manager
from tests.unit.manager.helpers import http_get
from tests.waiting import eventually


class Blocking:
    """Runs until stopped; records what happened."""

    def __init__(self, name: str = "blocking") -> None:
        self.name = name
        self.started = threading.Event()
        self.stopped = threading.Event()

    def run(self, stop: threading.Event) -> None:
        self.started.set()
        stop.wait()
        self.stopped.set()


class Raising:
    def run(self, stop: threading.Event) -> None:
        raise OSError("address already in use")


class Returning:
    def run(self, stop: threading.Event) -> None:
        return


def manager(election: LeaderElectionOptions | None = None,
            clock: FakeClock | None = None) -> Manager:
    return Manager(FakeClient(), ManagerOptions(
        leader_election=election, health=HealthOptions(bind_address="127.0.0.1:0")),
        clock=clock)


def test_runnables_run_until_stop_and_are_joined(runners: list[Runner]) -> None:
    mgr = manager()
    first, second = Blocking(), Blocking()
    mgr.add(first)
    mgr.add(second)
    r = start_manager(mgr)
    runners.append(r)
    eventually(lambda: first.started.is_set() and second.started.is_set(), what="started")
    names = {t.name for t in threading.enumerate()}
    assert {"runnable-blocking", "runnable-blocking-2"} <= names
    assert http_get(mgr, "/healthz/runnables") == (200, "ok")
    r.shutdown()
    assert r.error is None
    assert first.stopped.is_set() and second.stopped.is_set()
    assert not {"runnable-blocking", "runnable-blocking-2"} & {
        t.name for t in threading.enumerate()}


@pytest.mark.parametrize(("runnable", "reason"), [
    (Raising(), "Raising failed: OSError: address already in use"),
    (Returning(), "Returning exited"),
])
def test_a_runnable_that_dies_fails_healthz(runners: list[Runner], runnable: object,
                                            reason: str) -> None:
    mgr = manager()
    mgr.add(runnable)  # type: ignore[arg-type]
    r = start_manager(mgr)
    runners.append(r)
    eventually(lambda: http_get(mgr, "/healthz")[0] == 500, what="healthz fails")
    code, body = http_get(mgr, "/healthz?verbose")
    assert code == 500 and f"[-]runnables failed: {reason}" in body
    r.shutdown()
    assert r.error is None


def test_leader_runnables_start_only_while_leading(runners: list[Runner]) -> None:
    clock = FakeClock()
    store = FakeLockStore()
    now = datetime(2026, 1, 1, tzinfo=UTC)
    store.record = LeaderElectionRecord("other", 15, now, now)
    election = LeaderElectionOptions(id="mgr", lock=FakeLock(store, "me"), lease_duration=15,
                                     renew_deadline=10, retry_period=2, jitter_factor=1.0)
    mgr = manager(election, clock)
    always, leader_only = Blocking("always"), Blocking("leader-only")
    mgr.add(always)
    mgr.add(leader_only, needs_leader=True)
    r = start_manager(mgr)
    runners.append(r)
    eventually(always.started.is_set, what="non-leader runnable started")
    assert mgr.elector is not None
    assert clock.wait_for_waiters(1)
    assert not leader_only.started.is_set()
    for _ in range(10):  # the other holder stops renewing; we take over after 15s
        assert clock.wait_for_waiters(1)
        clock.step(2)
        if mgr.elector.is_leader():
            break
    eventually(leader_only.started.is_set, what="leader runnable started once leading")
    r.shutdown()
    assert r.error is None
    assert always.stopped.is_set() and leader_only.stopped.is_set()


def test_add_after_run_is_refused(runners: list[Runner]) -> None:
    mgr = manager()
    r = start_manager(mgr)
    runners.append(r)
    with pytest.raises(RuntimeError, match=r"before Manager\.run"):
        mgr.add(Blocking())
    r.shutdown()
