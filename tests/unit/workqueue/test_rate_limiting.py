"""RateLimitingQueue: add_rate_limited/forget/num_requeues on a FakeClock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyctrl.testing import FakeClock
from pyctrl.workqueue import (
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
)
from tests.unit.workqueue.helpers import step_and_settle
from tests.waiting import eventually

Make = Callable[..., Any]


def test_add_rate_limited_waits_the_limiters_delay(make: Make, clock: FakeClock) -> None:
    q = make(
        RateLimitingQueue, clock=clock, rate_limiter=ItemExponentialFailureRateLimiter(1.0, 60.0)
    )
    q.add_rate_limited("a")
    assert q.num_requeues("a") == 1
    step_and_settle(q, clock, 0.5)
    assert len(q) == 0
    step_and_settle(q, clock, 0.5)
    eventually(lambda: len(q) == 1)
    q.done(q.get())
    q.add_rate_limited("a")  # second failure: 2s
    assert q.num_requeues("a") == 2
    step_and_settle(q, clock, 1.0)
    assert len(q) == 0
    step_and_settle(q, clock, 1.0)
    eventually(lambda: len(q) == 1)


def test_forget_resets_the_back_off(make: Make, clock: FakeClock) -> None:
    q = make(
        RateLimitingQueue, clock=clock, rate_limiter=ItemExponentialFailureRateLimiter(1.0, 60.0)
    )
    q.add_rate_limited("a")
    q.add_rate_limited("a")
    assert q.num_requeues("a") == 2
    q.forget("a")
    assert q.num_requeues("a") == 0
    assert q._waiting_count() == 1  # forget does not remove the pending item


def test_default_rate_limiter_is_the_controller_default(make: Make, clock: FakeClock) -> None:
    q = make(RateLimitingQueue, clock=clock)
    assert isinstance(q.rate_limiter, MaxOfRateLimiter)
    q.add_rate_limited("a")  # 5ms for the first failure
    step_and_settle(q, clock, 0.005)
    eventually(lambda: len(q) == 1)


def test_add_rate_limited_is_ignored_after_shut_down(make: Make, clock: FakeClock) -> None:
    q = make(RateLimitingQueue, clock=clock)
    q.shut_down()
    q.add_rate_limited("a")
    assert q.num_requeues("a") == 0
    assert len(q) == 0
