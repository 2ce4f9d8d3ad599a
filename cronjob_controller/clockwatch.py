"""Notice a wall-clock jump and re-evaluate every CronJob at once.

Requeues computed from wall time (the next scheduled run) assume the wall clock moves like
the monotonic one; after a jump (NTP step, VM resume) a CronJob could sleep out a stale delay.

Contract:

* :func:`clock_jump_watch` compares wall time against monotonic time every ``period``
  seconds (on the injected Clock, so a FakeClock drives it) and calls ``on_jump()`` once per
  jump of at least ``threshold`` seconds, either way. It returns promptly when ``stop`` is set.
* :class:`ClockJumpWatch` is the same as a :class:`pyctrl.Runnable` (``run(stop)``), named
  ``cronjob-clock-watch``, for ``Manager.add``: the Manager runs it in a named thread and
  joins it on shutdown.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

from pyctrl import Clock

__all__ = ["ClockJumpWatch", "clock_jump_watch"]

log = structlog.get_logger(__name__)


def clock_jump_watch(clock: Clock, stop: threading.Event, on_jump: Callable[[], object],
                     period: float = 1.0, threshold: float = 2.0) -> None:
    """Call ``on_jump()`` when wall time moves against monotonic time by ``threshold`` s."""
    offset = clock.time() - clock.monotonic()
    while not clock.sleep(period, stop):
        current = clock.time() - clock.monotonic()
        if abs(current - offset) >= threshold:
            log.warning("wall clock jumped; re-evaluating all CronJobs",
                        jump_seconds=round(current - offset, 3))
            on_jump()
        offset = current


class ClockJumpWatch:
    """:func:`clock_jump_watch` as a Manager runnable."""

    name = "cronjob-clock-watch"

    def __init__(self, clock: Clock, on_jump: Callable[[], object], *, period: float = 1.0,
                 threshold: float = 2.0) -> None:
        if period <= 0 or threshold <= 0:
            raise ValueError("period and threshold must be > 0")
        self.clock = clock
        self.on_jump = on_jump
        self.period = period
        self.threshold = threshold

    def run(self, stop: threading.Event) -> None:
        clock_jump_watch(self.clock, stop, self.on_jump, self.period, self.threshold)
