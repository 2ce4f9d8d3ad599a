"""Retry a read-modify-write on conflict (client-go ``util/retry``).

Contract:

* :func:`retry_on_conflict` calls ``fn()`` (which must re-read the object, apply its change and
  write it) up to ``backoff.steps`` times while it raises :class:`~pyctrl.errors.Conflict`
  (HTTP 409: someone else wrote the object in between). It returns ``fn``'s result on the first
  success and re-raises the *last* Conflict once the steps are used up. Any other exception
  propagates at once.
* :func:`on_error` is the general form: retry while ``retriable(err)`` is true.
* Between attempts it waits ``duration * factor**k`` seconds (k = 0, 1, ...), each wait
  stretched by up to ``jitter`` of itself and capped by ``cap`` when set; there are at most
  ``steps - 1`` waits. Waits go through the injected :class:`~pyctrl.clock.Clock` and end
  early when ``stop`` is set, in which case the last error is raised without another attempt.
* :data:`DEFAULT_RETRY` (5 steps, 10 ms, factor 1, jitter 0.1) suits a conflict with a busy
  writer of the same object; :data:`DEFAULT_BACKOFF` (4 steps, 10 ms, factor 5, jitter 0.1)
  suits waiting out a slower condition. Both carry client-go's values.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pyctrl.clock import Clock, RealClock
from pyctrl.errors import Conflict

__all__ = ["DEFAULT_BACKOFF", "DEFAULT_RETRY", "Backoff", "on_error", "retry_on_conflict"]

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """How many attempts and how long to wait between them (see module docstring)."""

    steps: int
    duration: float
    factor: float = 1.0
    jitter: float = 0.0
    cap: float | None = None

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError("Backoff.steps must be >= 1")
        if self.duration < 0 or self.factor < 0 or self.jitter < 0:
            raise ValueError("Backoff.duration, factor and jitter must be >= 0")
        if self.cap is not None and self.cap < 0:
            raise ValueError("Backoff.cap must be >= 0")

    def delays(self, rand: Callable[[], float] = random.random) -> list[float]:
        """The ``steps - 1`` waits between attempts, jitter applied."""
        out: list[float] = []
        base = self.duration
        for _ in range(self.steps - 1):
            wait = base if self.cap is None else min(base, self.cap)
            if self.jitter > 0:
                wait += wait * self.jitter * rand()
            out.append(wait)
            base *= self.factor
        return out


DEFAULT_RETRY = Backoff(steps=5, duration=0.010, factor=1.0, jitter=0.1)
DEFAULT_BACKOFF = Backoff(steps=4, duration=0.010, factor=5.0, jitter=0.1)


def on_error(
    backoff: Backoff,
    retriable: Callable[[Exception], bool],
    fn: Callable[[], T],
    *,
    clock: Clock | None = None,
    stop: threading.Event | None = None,
    rand: Callable[[], float] = random.random,
) -> T:
    """Call ``fn`` until it succeeds, raises a non-retriable error, or the steps run out."""
    clk: Clock = clock or RealClock()
    stop_event = stop or threading.Event()
    waits = backoff.delays(rand)
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as err:
            if not retriable(err) or attempt >= len(waits):
                raise
            if clk.sleep(waits[attempt], stop_event):
                raise
            attempt += 1


def retry_on_conflict(
    fn: Callable[[], T],
    *,
    backoff: Backoff = DEFAULT_RETRY,
    clock: Clock | None = None,
    stop: threading.Event | None = None,
) -> T:
    """Re-run the read-modify-write ``fn`` while it fails with 409 Conflict."""
    return on_error(backoff, lambda err: isinstance(err, Conflict), fn, clock=clock, stop=stop)
