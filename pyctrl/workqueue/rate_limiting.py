"""RateLimitingQueue: a :class:`DelayingQueue` whose retries are paced by a RateLimiter.

Contract (client-go's ``RateLimitingInterface``):

* ``add_rate_limited(item)`` asks the limiter how long ``item`` must wait (which records one
  more failure) and adds it after that delay; it counts ``workqueue_retries_total`` when
  metrics are on. Ignored after shutdown, like every add.
* ``forget(item)`` clears the limiter's history for ``item``: call it once the item was
  processed successfully, or its next failure backs off from where the last one stopped.
  It does not remove the item from the queue.
* ``num_requeues(item)`` is the limiter's failure count for ``item``.
* The default limiter is :func:`default_controller_rate_limiter` (built on the queue's clock).
"""

from __future__ import annotations

from typing import Generic

from prometheus_client import CollectorRegistry

from pyctrl.clock import Clock
from pyctrl.workqueue.delaying import DelayingQueue
from pyctrl.workqueue.queue import T
from pyctrl.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter

__all__ = ["RateLimitingQueue"]


class RateLimitingQueue(DelayingQueue[T], Generic[T]):
    """A delaying work queue with per-item retry pacing (see module docstring)."""

    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        super().__init__(name=name, clock=clock, registry=registry)
        self.rate_limiter: RateLimiter = (
            rate_limiter if rate_limiter is not None
            else default_controller_rate_limiter(self._clock)
        )

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the delay its limiter prescribes (one more failure)."""
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retries.inc()
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Clear ``item``'s retry history."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """How many times ``item`` was rate-limited since it was last forgotten."""
        return self.rate_limiter.num_requeues(item)
