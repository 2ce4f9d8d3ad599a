"""TokenBucketRateLimiter: burst, refill and waiting, all on a FakeClock."""

from __future__ import annotations

import threading

import pytest

from pyctrl.kube.ratelimit import TokenBucketRateLimiter
from pyctrl.testing.fake_clock import FakeClock


def test_burst_then_refill_at_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucketRateLimiter(qps=2, burst=3, clock=clock)
    assert [bucket.try_accept() for _ in range(4)] == [True, True, True, False]
    clock.step(0.5)
    assert bucket.try_accept() and not bucket.try_accept()
    clock.step(10)
    assert [bucket.try_accept() for _ in range(4)] == [True, True, True, False]


def test_reservations_are_spaced_by_one_over_qps() -> None:
    bucket = TokenBucketRateLimiter(qps=4, burst=1, clock=FakeClock())
    assert [bucket.reserve() for _ in range(4)] == [0.0, 0.25, 0.5, 0.75]
    bucket.cancel()
    assert bucket.reserve() == 0.75


def test_accept_waits_on_the_clock() -> None:
    clock = FakeClock()
    bucket = TokenBucketRateLimiter(qps=1, burst=1, clock=clock)
    assert bucket.accept()
    done = threading.Event()
    t = threading.Thread(target=lambda: done.set() if bucket.accept() else None, name="acc")
    t.start()
    try:
        assert clock.wait_for_waiters(1)
        assert not done.is_set()
        clock.step(1)
        assert done.wait(5.0)
    finally:
        t.join(5.0)


def test_accept_returns_false_when_stopped() -> None:
    clock = FakeClock()
    bucket = TokenBucketRateLimiter(qps=1, burst=1, clock=clock)
    bucket.accept()
    stop = threading.Event()
    stop.set()
    assert bucket.accept(stop) is False
    assert bucket.reserve() == 1.0  # the cancelled token was given back


def test_zero_qps_disables_limiting_and_bad_burst_rejected() -> None:
    bucket = TokenBucketRateLimiter(qps=0, burst=0, clock=FakeClock())
    assert all(bucket.try_accept() for _ in range(1000))
    with pytest.raises(ValueError):
        TokenBucketRateLimiter(qps=1, burst=0)
