"""Work queues in client-go's shape: fair, stingy, delaying and rate-limited.

* :class:`Queue` -- fair FIFO of hashable keys; an item is never processed by two workers at
  once; adds while processing re-queue it after ``done``; ``shut_down(drain=...)``.
* :class:`DelayingQueue` -- adds ``add_after(item, delay)`` (one waiter thread on the Clock).
* :class:`RateLimitingQueue` -- adds ``add_rate_limited``/``forget``/``num_requeues``.
* :class:`PriorityQueue` -- a RateLimitingQueue whose adds take a priority (higher first,
  ``LOW_PRIORITY``/``NORMAL_PRIORITY``), with aging so a low item waits at most ``max_wait``
  behind newer normal ones.
* Rate limiters (``RateLimiter`` protocol), :class:`TokenBucket`, and Prometheus metrics with
  client-go's names when a ``registry`` is given (none at all otherwise).
"""

from pyctrl.workqueue.delaying import DelayingQueue
from pyctrl.workqueue.priority import (
    DEFAULT_MAX_WAIT,
    LOW_PRIORITY,
    NORMAL_PRIORITY,
    PriorityQueue,
)
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
    "DEFAULT_MAX_WAIT",
    "LOW_PRIORITY",
    "NORMAL_PRIORITY",
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "PriorityQueue",
    "Queue",
    "RateLimiter",
    "RateLimitingQueue",
    "ShutDown",
    "TokenBucket",
    "default_controller_rate_limiter",
]
