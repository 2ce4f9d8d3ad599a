"""Rate limiters and the token bucket, on a FakeClock."""

from __future__ import annotations

import math
import threading

import pytest

from pyctrl.testing import FakeClock
from pyctrl.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    TokenBucket,
    default_controller_rate_limiter,
)


def test_exponential_doubles_per_failure_per_item() -> None:
    r = ItemExponentialFailureRateLimiter(0.001, 1.0)
    assert [r.when("a") for _ in range(4)] == pytest.approx([0.001, 0.002, 0.004, 0.008])
    assert r.when("b") == pytest.approx(0.001)
    assert r.num_requeues("a") == 4
    assert r.num_requeues("b") == 1


def test_exponential_is_capped_and_never_overflows() -> None:
    r = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [r.when("a") for _ in range(2000)]
    assert max(delays) == 1000.0
    assert delays[-1] == 1000.0


def test_exponential_forget_starts_over() -> None:
    r = ItemExponentialFailureRateLimiter(0.001, 1.0)
    r.when("a")
    r.when("a")
    r.forget("a")
    assert r.num_requeues("a") == 0
    assert r.when("a") == pytest.approx(0.001)


def test_fast_slow_switches_after_max_fast_attempts() -> None:
    r = ItemFastSlowRateLimiter(0.01, 5.0, 3)
    assert [r.when("a") for _ in range(5)] == [0.01, 0.01, 0.01, 5.0, 5.0]
    assert r.num_requeues("a") == 5
    r.forget("a")
    assert r.when("a") == 0.01


def test_token_bucket_spends_burst_then_goes_into_debt(clock: FakeClock) -> None:
    b = TokenBucket(qps=1.0, burst=2, clock=clock)
    assert [b.reserve() for _ in range(4)] == pytest.approx([0.0, 0.0, 1.0, 2.0])
    clock.step(1.0)  # one token's worth of debt repaid
    assert b.reserve() == pytest.approx(2.0)


def test_token_bucket_refills_at_qps_up_to_burst(clock: FakeClock) -> None:
    b = TokenBucket(qps=10.0, burst=5, clock=clock)
    for _ in range(5):
        assert b.try_accept()
    assert not b.try_accept()
    clock.step(0.1)
    assert b.try_accept()
    assert not b.try_accept()
    clock.step(100.0)  # long idle: only burst tokens accumulate
    assert sum(b.try_accept() for _ in range(10)) == 5


def test_token_bucket_wait_returns_false_when_stopped(clock: FakeClock) -> None:
    b = TokenBucket(qps=1.0, burst=1, clock=clock)
    assert b.wait(threading.Event())  # a token is there: no wait
    stop = threading.Event()
    stop.set()
    assert not b.wait(stop)
    clock.step(1.0)  # the token reserved by the cancelled wait was handed back
    assert b.try_accept()


def test_token_bucket_wait_blocks_until_the_clock_moves(clock: FakeClock) -> None:
    b = TokenBucket(qps=2.0, burst=1, clock=clock)
    b.reserve()
    got: list[bool] = []
    t = threading.Thread(target=lambda: got.append(b.wait(threading.Event())), name="waiter")
    t.start()
    assert clock.wait_for_waiters(1)
    assert not got
    clock.step(0.5)
    t.join(5)
    assert got == [True]


def test_token_bucket_with_infinite_qps_never_limits() -> None:
    b = TokenBucket(qps=math.inf, burst=0)
    assert all(b.reserve() == 0.0 for _ in range(1000))
    assert b.try_accept()


@pytest.mark.parametrize(("qps", "burst"), [(0.0, 1), (-1.0, 1), (1.0, 0)])
def test_token_bucket_rejects_bad_settings(qps: float, burst: int) -> None:
    with pytest.raises(ValueError):
        TokenBucket(qps=qps, burst=burst)


def test_bucket_limiter_is_overall_not_per_item(clock: FakeClock) -> None:
    r = BucketRateLimiter(qps=1.0, burst=1, clock=clock)
    assert r.when("a") == 0.0
    assert r.when("b") == pytest.approx(1.0)
    r.forget("a")
    assert r.num_requeues("a") == 0


def test_max_of_returns_the_largest_delay_and_updates_all(clock: FakeClock) -> None:
    exp = ItemExponentialFailureRateLimiter(0.001, 1.0)
    fast_slow = ItemFastSlowRateLimiter(0.0, 3.0, 2)
    r = MaxOfRateLimiter(exp, fast_slow)
    assert r.when("a") == pytest.approx(0.001)
    assert r.when("a") == pytest.approx(0.002)
    assert r.when("a") == 3.0
    assert r.num_requeues("a") == 3
    r.forget("a")
    assert exp.num_requeues("a") == 0 and fast_slow.num_requeues("a") == 0
    with pytest.raises(ValueError):
        MaxOfRateLimiter()


def test_default_controller_limiter_combines_backoff_and_bucket(clock: FakeClock) -> None:
    r = default_controller_rate_limiter(clock)
    # 100 distinct first failures fit in the burst: only the 5ms back-off applies.
    assert all(r.when(i) == pytest.approx(0.005) for i in range(100))
    # The 101st is paced by the 10 qps bucket.
    assert r.when(100) == pytest.approx(0.1)
    # One item failing repeatedly is governed by its exponential back-off.
    clock.step(1000.0)
    delays = [r.when("x") for _ in range(12)]
    assert delays[-1] == pytest.approx(0.005 * 2**11)


def test_limiters_satisfy_the_protocol(clock: FakeClock) -> None:
    limiters: list[object] = [
        ItemExponentialFailureRateLimiter(),
        ItemFastSlowRateLimiter(0.1, 1.0, 1),
        BucketRateLimiter(1.0, 1, clock),
        default_controller_rate_limiter(clock),
    ]
    assert all(isinstance(r, RateLimiter) for r in limiters)
