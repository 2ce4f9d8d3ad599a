"""clock_jump_watch, ClockJumpWatch: a wall-clock jump (against monotonic time) re-evaluates
every CronJob.

The watch runs in a thread on a FakeClock. :class:`CountingClock` counts the watch's sleeps,
so a test knows exactly when one loop iteration (compare, maybe ``on_jump``) has finished
without timing anything: it waits for the next sleep to begin.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest

from cronjob_controller.api import CRONJOBS
from cronjob_controller.clockwatch import ClockJumpWatch, clock_jump_watch
from cronjob_controller.wiring import build
from pyctrl import Manager, ManagerOptions, MetricsOptions, Request, Result
from pyctrl.testing import FakeClient, FakeClock
from tests.threads import running
from tests.unit.cronjob.sync_fixture import KEY, NAMESPACE, NOW, new_cronjob
from tests.unit.runtime.helpers import eventually

WAIT = 5.0  # real seconds; only an upper bound for a failing test


class CountingClock(FakeClock):
    """A FakeClock that tells how many ``sleep`` calls have started."""

    def __init__(self) -> None:
        super().__init__(NOW)
        self._sleeps = 0
        self._sleeps_cond = threading.Condition()

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        with self._sleeps_cond:
            self._sleeps += 1
            self._sleeps_cond.notify_all()
        return super().sleep(seconds, stop)

    def wait_for_sleeps(self, count: int) -> bool:
        with self._sleeps_cond:
            return self._sleeps_cond.wait_for(lambda: self._sleeps >= count, WAIT)

    @property
    def sleeps(self) -> int:
        with self._sleeps_cond:
            return self._sleeps


class Watch:
    """A running clock_jump_watch and what it reported."""

    def __init__(self, clock: CountingClock) -> None:
        self.clock = clock
        self.stop = threading.Event()
        self.jumps = 0
        self._lock = threading.Lock()
        self.thread = threading.Thread(
            target=clock_jump_watch, args=(clock, self.stop, self._on_jump),
            kwargs={"period": 1.0, "threshold": 2.0}, name="test-clock-jump-watch")

    def _on_jump(self) -> None:
        with self._lock:
            self.jumps += 1

    def tick(self) -> None:
        """Let one period pass and wait until the watch has looked at the clock."""
        before = self.clock.sleeps
        assert self.clock.wait_for_waiters(1, WAIT)
        self.clock.step(1.0)
        assert self.clock.wait_for_sleeps(before + 1), "the watch did not loop"


@pytest.fixture
def watch() -> Iterator[Watch]:
    w = Watch(CountingClock())
    w.thread.start()
    assert w.clock.wait_for_sleeps(1)
    try:
        yield w
    finally:
        w.stop.set()
        w.thread.join(WAIT)
    assert not w.thread.is_alive()


def test_backwards_wall_clock_jump_triggers_on_jump(watch: Watch) -> None:
    watch.clock.set_time(NOW - timedelta(hours=1))

    watch.tick()

    assert watch.jumps == 1


def test_time_moving_normally_never_triggers(watch: Watch) -> None:
    for _ in range(3):
        watch.tick()

    assert watch.jumps == 0


def test_jitter_below_the_threshold_is_ignored(watch: Watch) -> None:
    watch.clock.set_time(watch.clock.now() - timedelta(seconds=1))

    watch.tick()

    assert watch.jumps == 0


def test_one_jump_is_reported_once(watch: Watch) -> None:
    watch.clock.set_time(NOW - timedelta(minutes=10))
    watch.tick()
    watch.tick()
    watch.tick()

    assert watch.jumps == 1


def test_watch_stops_promptly_while_sleeping_a_long_period() -> None:
    clock = CountingClock()
    stop = threading.Event()
    thread = threading.Thread(target=clock_jump_watch, args=(clock, stop, lambda: None),
                              kwargs={"period": 3600.0}, name="test-clock-jump-watch")
    thread.start()
    try:
        assert clock.wait_for_sleeps(1)
        assert clock.wait_for_waiters(1, WAIT)
    finally:
        stop.set()
        thread.join(WAIT)
    assert not thread.is_alive()  # no clock step was needed to notice ``stop``


def test_clock_jump_watch_runnable_reports_a_jump() -> None:
    clock = CountingClock()
    jumps: list[int] = []
    with running(ClockJumpWatch(clock, lambda: jumps.append(1)).run, name="test-watch"):
        assert clock.wait_for_sleeps(1)
        clock.set_time(NOW - timedelta(hours=1))
        assert clock.wait_for_waiters(1, WAIT)
        clock.step(1.0)
        assert clock.wait_for_sleeps(2)
    assert jumps == [1]


def test_clock_jump_watch_refuses_a_nonpositive_period() -> None:
    with pytest.raises(ValueError):
        ClockJumpWatch(FakeClock(NOW), lambda: None, period=0)


def test_built_controller_resyncs_every_cronjob_after_a_wall_clock_jump() -> None:
    # build() adds the watch to the Manager: no thread of the caller's own.
    clock = CountingClock()
    client = FakeClient(clock)
    client.add_object(CRONJOBS, new_cronjob(suspend=True))  # syncs create nothing
    manager = Manager(client, ManagerOptions(metrics=MetricsOptions(runtime_metrics=False)),
                      clock=clock)
    wired = build(manager, namespaces=[NAMESPACE], workers=1)
    synced: list[str] = []
    reconcile = wired.reconciler.reconcile

    def counting_reconcile(request: Request) -> Result | None:
        synced.append(str(request))
        return reconcile(request)

    wired.reconciler.reconcile = counting_reconcile  # type: ignore[method-assign]
    with running(manager.run, name="manager"):
        # The first sync writes the status; its update event brings the second, the last.
        eventually(lambda: len(synced) >= 2, what="the first syncs")
        before = len(synced)
        clock.set_time(NOW - timedelta(hours=1))

        def resynced() -> bool:
            clock.step(1.0)
            return len(synced) > before

        eventually(resynced, what="a resync after the jump")
    assert set(synced) == {KEY}
