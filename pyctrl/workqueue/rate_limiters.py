"""Rate limiters for the rate-limiting work queue (client-go's ``default_rate_limiters.go``).

Contract:

* A :class:`RateLimiter` answers ``when(item)``: how many seconds to wait before the item may be
  retried. ``when`` records a failure (it is called once per retry); ``forget(item)`` clears the
  item's history once it succeeded; ``num_requeues(item)`` reports how many failures are on
  record. All limiters here are thread-safe.
* :class:`ItemExponentialFailureRateLimiter`: ``base * 2**failures``, capped at ``cap``.
* :class:`ItemFastSlowRateLimiter`: ``fast_delay`` for the first ``max_fast_attempts`` retries,
  then ``slow_delay``.
* :class:`BucketRateLimiter`: an overall (not per item) token bucket; ``when`` takes a token
  reservation and returns its delay, so a burst of retries is spread at ``qps``.
* :class:`MaxOfRateLimiter`: the worst (largest) answer of several limiters.
* :func:`default_controller_rate_limiter`: max-of(exponential 5ms..1000s, bucket 10 qps /
  burst 100), client-go's ``DefaultControllerRateLimiter``.

:class:`TokenBucket` follows ``golang.org/x/time/rate.Limiter`` reservations: tokens refill
continuously at ``qps`` up to ``burst``; a reservation always succeeds and may drive the
balance negative, and the debt is the wait. It reads only the injected Clock's monotonic time,
so it is exact under a FakeClock. It is exported for reuse (the REST client's QPS limiter).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable
from typing import Protocol, runtime_checkable

from pyctrl.clock import Clock, RealClock

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "TokenBucket",
    "default_controller_rate_limiter",
]

# Past this many doublings any sane base exceeds any sane cap (and 2.0**n would overflow).
_MAX_EXPONENT = 1000


@runtime_checkable
class RateLimiter(Protocol):
    """Decides how long an item waits before its next retry (see module docstring)."""

    def when(self, item: Hashable) -> float:
        """Record a failure of ``item`` and return the seconds to wait before retrying it."""
        ...

    def forget(self, item: Hashable) -> None:
        """Drop ``item``'s failure history (it succeeded)."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many failures of ``item`` are on record."""
        ...


class ItemExponentialFailureRateLimiter:
    """Per-item exponential back-off: ``base * 2**failures`` seconds, at most ``cap``."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        if base < 0 or cap < 0:
            raise ValueError("base and cap must be non-negative")
        self.base = base
        self.cap = cap
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        with self._lock:
            exp = self._failures.get(item, 0)
            self._failures[item] = exp + 1
        if exp >= _MAX_EXPONENT:
            return self.cap
        return min(self.cap, self.base * 2.0**exp)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class ItemFastSlowRateLimiter:
    """``fast_delay`` for the first ``max_fast_attempts`` retries of an item, then
    ``slow_delay``."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        if fast_delay < 0 or slow_delay < 0 or max_fast_attempts < 0:
            raise ValueError("delays and max_fast_attempts must be non-negative")
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._lock = threading.Lock()
        self._attempts: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        with self._lock:
            attempts = self._attempts.get(item, 0) + 1
            self._attempts[item] = attempts
        return self.fast_delay if attempts <= self.max_fast_attempts else self.slow_delay

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._attempts.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._attempts.get(item, 0)


class TokenBucket:
    """A token bucket with x/time/rate reservation semantics (see module docstring).

    ``qps`` may be ``math.inf`` (no limit); otherwise ``qps > 0`` and ``burst >= 1``. The
    bucket starts full.
    """

    def __init__(self, qps: float, burst: int, clock: Clock | None = None) -> None:
        if not qps > 0:
            raise ValueError("qps must be > 0 (math.inf for no limit)")
        if burst < 1 and not math.isinf(qps):
            raise ValueError("burst must be >= 1")
        self.qps = qps
        self.burst = burst
        self._clock: Clock = clock if clock is not None else RealClock()
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = self._clock.monotonic()

    def _advance(self, now: float) -> None:
        """Refill for the time since the last update (caller holds ``_lock``)."""
        elapsed = max(0.0, now - self._last)
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
        self._last = max(self._last, now)

    def reserve(self, n: int = 1) -> float:
        """Take ``n`` tokens now (possibly into debt); return the seconds until they are
        really available (0.0 when they already are)."""
        if math.isinf(self.qps):
            return 0.0
        with self._lock:
            self._advance(self._clock.monotonic())
            self._tokens -= n
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def try_accept(self) -> bool:
        """Take one token if one is available right now, without waiting."""
        if math.isinf(self.qps):
            return True
        with self._lock:
            self._advance(self._clock.monotonic())
            if self._tokens >= 1:
                self._tokens -= 1
                return True
            return False

    def wait(self, stop: threading.Event) -> bool:
        """Block (on the Clock) until a token is available; False if ``stop`` was set first
        (the reserved token is then handed back)."""
        delay = self.reserve()
        if delay <= 0:
            return True
        if self._clock.sleep(delay, stop):
            with self._lock:
                self._tokens = min(float(self.burst), self._tokens + 1)
            return False
        return True


class BucketRateLimiter:
    """An overall token bucket: ``when`` returns the delay of a one-token reservation; there
    is no per-item history (``forget`` is a no-op, ``num_requeues`` is 0)."""

    def __init__(self, qps: float, burst: int, clock: Clock | None = None) -> None:
        self.bucket = TokenBucket(qps, burst, clock)

    def when(self, item: Hashable) -> float:
        return self.bucket.reserve()

    def forget(self, item: Hashable) -> None:
        return None

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """Asks every limiter (so each records the failure) and returns the longest delay."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max([limiter.when(item) for limiter in self.limiters])

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(clock: Clock | None = None) -> MaxOfRateLimiter:
    """client-go's default: per-item exponential 5ms..1000s, and 10 qps / burst 100 overall."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )
