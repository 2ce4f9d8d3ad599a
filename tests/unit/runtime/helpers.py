"""Shared helpers for runtime unit tests: driving a FakeClock until the threads react.

:func:`step_until` steps the clock a retry period at a time until a condition holds. Waiting
for a condition is :func:`tests.waiting.eventually`'s job (re-exported here for the test folders
that still import it from this module).
"""

from __future__ import annotations

from collections.abc import Callable

from pyctrl.testing.fake_clock import FakeClock
from tests.waiting import eventually

__all__ = ["eventually", "step_until"]


def step_until(clock: FakeClock, done: Callable[[], bool], what: str, *, step: float = 2.0,
               tries: int = 15) -> None:
    """Step ``clock`` by ``step`` (a retry period) at most ``tries`` times until ``done()``,
    giving the threads up to 0.5 s of real time to react after each step."""
    for _ in range(tries):
        try:
            eventually(done, timeout=0.5, what=what)
            return
        except AssertionError:
            clock.step(step)
    eventually(done, what=what)
