"""Work queues in client-go's shape: fair, stingy, delaying and rate-limited.

* :class:`Queue` -- fair FIFO of hashable keys; an item is never processed by two workers at
  once; adds while processing re-queue it after ``done``; ``shut_down(drain=...)``.
* :class:`DelayingQueue` -- adds ``add_after(item, delay)`` (one waiter thread on the Clock).
* :class:`RateLimitingQueue` -- adds ``add_rate_limited``/``forget``/``num_requeues``.
* Rate limiters (``RateLimiter`` protocol), :class:`TokenBucket`, and Prometheus metrics with
  client-go's names when a ``registry`` is given (none at all otherwise).
"""

from pyctrl.workqueue.delaying import DelayingQueue
from pyctrl.workqueue.queue import Queue, ShutDown
from pyctrl.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    TokenBucket,
    default_controller_rate_limiter,
)
from pyctrl.workqueue.rate_limiting import RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "Queue",
    "RateLimiter",
    "RateLimitingQueue",
    "ShutDown",
    "TokenBucket",
    "default_controller_rate_limiter",
]
