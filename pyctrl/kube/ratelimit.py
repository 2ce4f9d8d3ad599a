"""Client-side QPS/burst limiter for API requests (client-go's ``flowcontrol`` token bucket).

Contract:

* A :class:`TokenBucketRateLimiter` holds at most ``burst`` tokens and refills at ``qps``
  tokens per second of the injected :class:`pyctrl.clock.Clock`'s *monotonic* time. Each
  request takes one token; with none left the caller waits until its token has accrued.
* Reservations are first come, first served: ``reserve()`` takes the token immediately (the
  balance may go negative) and returns how long the caller must wait, so N concurrent callers
  are spaced exactly 1/qps apart instead of racing for each refill.
* ``qps <= 0`` disables limiting (client-go's "QPS < 0 means no limit").
* ``accept(stop)`` waits through ``clock.sleep`` so a FakeClock drives it in tests; it returns
  False when ``stop`` is set before the token is due (the token is then given back).

This lives in ``pyctrl.kube`` rather than reusing ``pyctrl.workqueue``'s bucket because layers
point one way: ``pyctrl.kube`` sits below every other pyctrl package and imports none of them
except ``pyctrl.clock`` and ``pyctrl.errors``.
"""

from __future__ import annotations

import threading

from pyctrl.clock import Clock, RealClock

__all__ = ["TokenBucketRateLimiter"]


class TokenBucketRateLimiter:
    """A token bucket of ``burst`` tokens refilled at ``qps`` per second (see module doc)."""

    def __init__(self, qps: float, burst: int, clock: Clock | None = None) -> None:
        if qps > 0 and burst < 1:
            raise ValueError(f"burst must be >= 1 when qps > 0, got {burst}")
        self._qps = float(qps)
        self._burst = max(1, int(burst))
        self._clock: Clock = clock if clock is not None else RealClock()
        self._lock = threading.Lock()
        self._tokens = float(self._burst)
        self._last = self._clock.monotonic()

    @property
    def qps(self) -> float:
        return self._qps

    @property
    def burst(self) -> int:
        return self._burst

    def _advance(self, now: float) -> None:
        elapsed = now - self._last
        if elapsed > 0:
            self._tokens = min(float(self._burst), self._tokens + elapsed * self._qps)
            self._last = now

    def try_accept(self) -> bool:
        """Take a token if one is available now; never waits."""
        if self._qps <= 0:
            return True
        with self._lock:
            self._advance(self._clock.monotonic())
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False

    def reserve(self) -> float:
        """Take a token now and return the seconds to wait before using it (0 if available)."""
        if self._qps <= 0:
            return 0.0
        with self._lock:
            self._advance(self._clock.monotonic())
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self._qps

    def cancel(self) -> None:
        """Give back a reserved token that will not be used."""
        if self._qps <= 0:
            return
        with self._lock:
            self._tokens = min(float(self._burst), self._tokens + 1.0)

    def accept(self, stop: threading.Event | None = None) -> bool:
        """Block (on the clock) until a token is available; False if ``stop`` was set first."""
        delay = self.reserve()
        if delay <= 0:
            return True
        if self._clock.sleep(delay, stop if stop is not None else threading.Event()):
            self.cancel()
            return False
        return True
