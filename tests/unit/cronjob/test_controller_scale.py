"""No run twice at scale: 2000 CronJobs due at one tick, through the real wiring.

The controller is built exactly as production builds it (:func:`cronjob_controller.wiring.build`
on a :class:`pyctrl.Manager`: informers, handlers, rate-limited queue, worker threads) over a
:class:`FakeClient` API server and a :class:`FakeClock`. One CronJob's Job is deleted the
instant it is created (a reactor: the create and the delete happen in the same call, before
the controller's deferred status write), as ``ttlSecondsAfterFinished: 0`` on a Job that
finishes in milliseconds would. Every CronJob must get exactly one create per scheduled time.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cronjob_controller.api import CRONJOBS
from cronjob_controller.wiring import build
from pyctrl import Manager, ManagerOptions
from pyctrl.kube import JOBS
from pyctrl.testing import Action, FakeClient, FakeClock
from tests.threads import running_manager
from tests.unit.cronjob.sync_fixture import fmt, new_cronjob, run_name
from tests.waiting import eventually

COUNT = 2000
NAMESPACE = "default"
VICTIM = "cj-0007"
TEN = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)


class World:
    """The fake API server, counting every Job create attempt by name."""

    def __init__(self) -> None:
        self.clock = FakeClock(TEN - timedelta(minutes=30))
        self.client = FakeClient(self.clock, history_size=100_000)
        self.creates: Counter[str] = Counter()
        self.deleted: list[str] = []
        self._mu = threading.Lock()
        self._inside = threading.local()
        self.client.prepend_reactor("create", JOBS, self._on_create)

    def _on_create(self, action: Action) -> Any:
        if getattr(self._inside, "busy", False) or action.options.get("dry_run"):
            return None  # our own nested create, or a dry run: let the fake do it
        name = str(action.object["metadata"]["name"])
        with self._mu:
            self.creates[name] += 1
        if not name.startswith(VICTIM + "-"):
            return None
        self._inside.busy = True
        try:
            created = self.client.create(JOBS, action.object, action.namespace)
        finally:
            self._inside.busy = False
        self.client.delete(JOBS, name, NAMESPACE)  # finished and deleted within "ms"
        with self._mu:
            self.deleted.append(name)
        return created

    def _status(self, name: str, field: str) -> str | None:
        status = self.client.get_object(CRONJOBS, name, NAMESPACE).get("status") or {}
        value = status.get(field)
        return str(value) if value else None

    def last_schedule(self, name: str) -> str | None:
        return self._status(name, "lastScheduleTime")

    def next_schedule(self, name: str) -> str | None:
        return self._status(name, "nextScheduleTime")


@pytest.fixture
def world() -> Iterator[tuple[World, Manager]]:
    w = World()
    for i in range(COUNT):
        w.client.add_object(CRONJOBS, new_cronjob(f"cj-{i:04d}", schedule="0 * * * *",
                                                  created=w.clock.now()))
    w.clock.set_time(TEN - timedelta(seconds=10))
    manager = Manager(w.client, ManagerOptions(graceful_shutdown_timeout=10), clock=w.clock)
    wired = build(manager, namespaces=[NAMESPACE], workers=4)
    with running_manager(manager, name="manager", join_timeout=60):
        informers = [*wired.cronjob_informers, *wired.job_informers]
        eventually(lambda: all(i.has_synced() for i in informers), 30, "informers synced")
        # Every CronJob synced once (nothing due yet) and waits for 10:00 in the delaying
        # queue: at the tick all 2000 come due at once.
        eventually(lambda: all(w.next_schedule(f"cj-{i:04d}") == fmt(TEN)
                               for i in range(COUNT)), 60, "initial syncs")
        yield w, manager


def _tick(w: World, when: datetime) -> None:
    """Move the clock past ``when`` and wait until every CronJob recorded that run."""
    w.clock.set_time(when + timedelta(seconds=1))
    expected = fmt(when)
    victim_job = run_name(VICTIM, when)
    names = [f"cj-{i:04d}" for i in range(COUNT)]

    def settled() -> bool:
        with w._mu:
            if w.creates[victim_job] > 1:
                return True  # the bug: fail below with the counts, not a timeout
        return all(w.last_schedule(n) == expected for n in names)

    eventually(settled, 120, f"every CronJob recorded {expected}")


def test_every_cronjob_gets_one_create_per_scheduled_time(
        world: tuple[World, Manager]) -> None:
    w, _ = world
    for when in (TEN, TEN + timedelta(hours=1)):
        _tick(w, when)
        wanted = {run_name(f"cj-{i:04d}", when) for i in range(COUNT)}
        with w._mu:
            counts = {name: n for name, n in w.creates.items() if name in wanted}
        assert set(counts) == wanted
        assert [n for n, c in counts.items() if c != 1] == []
        assert run_name(VICTIM, when) in w.deleted
