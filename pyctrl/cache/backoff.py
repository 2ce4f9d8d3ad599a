"""Exponential backoff with jitter and a reset after a healthy period (client-go's
``ExponentialBackoffManager`` as the Reflector uses it).

Named :class:`ExponentialBackoffManager` (client-go's name for it): it is a stateful source
of delays, unlike :class:`pyctrl.retry.Backoff`, the retry *settings* (client-go's
``wait.Backoff``).

Contract: ``next()`` returns how long to wait before the next attempt. The base delay starts
at ``initial``, doubles (``factor``) on every call up to ``maximum``, and returns to
``initial`` when more than ``reset_after`` seconds (by the injected clock) passed since the
previous call, i.e. after a healthy stretch. The returned delay is ``base * (1 + jitter * r)``
with ``r`` uniform in [0, 1), so jitter only ever lengthens the wait.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from pyctrl.clock import Clock

__all__ = ["ExponentialBackoffManager"]


class ExponentialBackoffManager:
    """Stateful exponential backoff (see module docstring). Not thread-safe: one owner."""

    __slots__ = ("_base", "_clock", "_factor", "_initial", "_jitter", "_last", "_max",
                 "_rand", "_reset_after")

    def __init__(self, clock: Clock, *, initial: float = 0.8, maximum: float = 30.0,
                 factor: float = 2.0, jitter: float = 1.0, reset_after: float = 120.0,
                 rand: Callable[[], float] = random.random) -> None:
        if initial <= 0 or maximum < initial or factor < 1 or jitter < 0 or reset_after <= 0:
            raise ValueError("invalid backoff settings")
        self._clock = clock
        self._initial = initial
        self._max = maximum
        self._factor = factor
        self._jitter = jitter
        self._reset_after = reset_after
        self._rand = rand
        self._base = 0.0
        self._last: float | None = None

    def next(self) -> float:
        """The delay before the next attempt (and advance the backoff)."""
        now = self._clock.monotonic()
        if self._last is None or now - self._last > self._reset_after:
            self._base = self._initial
        else:
            self._base = min(self._base * self._factor, self._max)
        self._last = now
        return self._base * (1.0 + self._jitter * self._rand())

    def reset(self) -> None:
        """Forget history: the next delay is ``initial`` again."""
        self._last = None
