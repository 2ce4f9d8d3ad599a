"""PriorityQueue with a FakeClock: order, dedup and move-up, the aging bound, delays, rate
limiting, metrics and shutdown (no sleeps: time moves only through the FakeClock)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pyctrl.testing import FakeClock
from pyctrl.workqueue import (
    LOW_PRIORITY,
    NORMAL_PRIORITY,
    ItemExponentialFailureRateLimiter,
    PriorityQueue,
    RateLimitingQueue,
    ShutDown,
)
from tests.unit.workqueue.helpers import step_and_settle
from tests.waiting import eventually

Make = Callable[..., Any]
MAX_WAIT = 10.0


def _drain(q: PriorityQueue[str]) -> list[str]:
    out = []
    while len(q):
        item = q.get()
        q.done(item)
        out.append(item)
    return out


def _pq(make: Make, clock: FakeClock, **kw: Any) -> PriorityQueue[str]:
    kw.setdefault("max_wait", MAX_WAIT)
    q: PriorityQueue[str] = make(PriorityQueue, clock=clock, **kw)
    return q


# -- order --------------------------------------------------------------------------------
def test_is_a_rate_limiting_queue_and_plain_adds_are_normal(make: Make, clock: FakeClock) -> None:
    q = _pq(make, clock)
    assert isinstance(q, RateLimitingQueue)
    q.add("a")
    assert q.priority_of("a") == NORMAL_PRIORITY
    assert q.priority_of("zzz") is None


def test_normal_before_low_fifo_within_a_priority(make: Make, clock: FakeClock) -> None:
    q = _pq(make, clock)
    q.add("low1", LOW_PRIORITY)
    q.add("n1")
    q.add("low2", LOW_PRIORITY)
    q.add("n2", NORMAL_PRIORITY)
    q.add("high", 10)
    assert _drain(q) == ["high", "n1", "n2", "low1", "low2"]


def test_reject_bad_max_wait(clock: FakeClock) -> None:
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="max_wait"):
            PriorityQueue(clock=clock, max_wait=bad)


# -- dedup: up, never down ----------------------------------------------------------------
def test_readd_at_higher_priority_moves_up(make: Make, clock: FakeClock) -> None:
    q = _pq(make, clock)
    q.add("a", LOW_PRIORITY)
    q.add("b", LOW_PRIORITY)
    q.add("n")
    q.add("b")  # up to NORMAL, keeping its queued time (older than "n")
    assert len(q) == 3
    assert q.priority_of("b") == NORMAL_PRIORITY
    assert _drain(q) == ["b", "n", "a"]


def test_readd_at_lower_priority_never_moves_down(make: Make, clock: FakeClock) -> None:
    q = _pq(make, clock)
    q.add("a")
    q.add("b")
    q.add("a", LOW_PRIORITY)
    assert q.priority_of("a") == NORMAL_PRIORITY
    assert _drain(q) == ["a", "b"]


def test_readd_while_processing_runs_once_more_at_the_highest_priority(
    make: Make, clock: FakeClock
) -> None:
    q = _pq(make, clock)
    q.add("a", LOW_PRIORITY)
    assert q.get() == "a"
    q.add("a", LOW_PRIORITY)
    q.add("a")  # moves the pending re-run up
    q.add("a", LOW_PRIORITY)  # never down
    assert q.priority_of("a") == NORMAL_PRIORITY
    assert len(q) == 0  # in flight: not handed out twice
    q.add("b")
    q.done("a")
    assert len(q) == 2
    assert _drain(q) == ["b", "a"]  # same rank: "a" entered the queue at done, after "b"
    q.done("a")  # not in flight: a no-op
    assert len(q) == 0


def test_parked_consumer_gets_the_item_handed_over(make: Make, clock: FakeClock) -> None:
    q = _pq(make, clock)
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append(q.get()))
    t.start()
    eventually(lambda: len(q._parked) == 1)
    q.add("a", LOW_PRIORITY)
    t.join(5)
    assert got == ["a"]
    assert q._processing == {"a"}


# -- aging ----------------------------------------------------------------------------------
def test_a_low_item_overtakes_normal_items_added_max_wait_after_it(
    make: Make, clock: FakeClock
) -> None:
    q = _pq(make, clock)
    q.add("low", LOW_PRIORITY)
    clock.step(MAX_WAIT - 0.5)
    q.add("younger")  # entered before low's max_wait ran out: still ahead of it
    clock.step(0.5)
    q.add("at-bound")  # entered exactly max_wait later: behind it (tie, low entered first)
    clock.step(1.0)
    q.add("later")
    assert _drain(q) == ["younger", "low", "at-bound", "later"]


def _steady_load(q: PriorityQueue[str], clock: FakeClock, backlog: int, d: float,
                 steps: int) -> float | None:
    """One worker; each item takes ``d`` clock seconds; a new NORMAL item arrives per item
    done, so the backlog stays at ``backlog`` forever. Returns when (clock seconds after it
    was added) the LOW item was handed out, or None if it never was within ``steps``."""
    for i in range(backlog):
        q.add(f"n{i}")
    start = clock.monotonic()
    q.add("low", LOW_PRIORITY)
    n = backlog
    for _ in range(steps):
        item = q.get()
        if item == "low":
            return clock.monotonic() - start
        clock.step(d)
        q.add(f"n{n}")
        n += 1
        q.done(item)
    return None


@pytest.mark.parametrize(("backlog", "d"), [(1, 0.1), (5, 0.1), (20, 0.25), (3, 3.0)])
def test_low_wait_is_bounded_under_steady_normal_load(
    make: Make, clock: FakeClock, backlog: int, d: float
) -> None:
    q = _pq(make, clock)
    waited = _steady_load(q, clock, backlog, d, steps=100_000)
    assert waited is not None, "low item starved"
    # The documented bound: max_wait + (B + 1) * d with one worker ...
    assert waited <= MAX_WAIT + (backlog + 1) * d
    # ... and NORMAL items did go first while it was young.
    assert waited >= MAX_WAIT - d


def test_without_aging_in_reach_the_same_load_starves_the_low_item(
    make: Make, clock: FakeClock
) -> None:
    """The load of the test above does starve a low item when aging is (practically) off:
    the bound test can fail."""
    q = _pq(make, clock, max_wait=1e12)
    assert _steady_load(q, clock, backlog=5, d=0.1, steps=5_000) is None


def test_low_wait_is_bounded_with_threaded_producer_and_workers(
    make: Make, clock: FakeClock
) -> None:
    """Two worker threads re-adding a NORMAL item per item done (as fast as they consume);
    each item costs ``d`` of FakeClock time. The LOW item's queue wait stays in the bound."""
    q = _pq(make, clock)
    backlog, d, workers = 8, 0.05, 2
    for i in range(backlog):
        q.add(f"n{i}")
    added_at = clock.monotonic()
    q.add("low", LOW_PRIORITY)
    handed: list[float] = []
    counter = iter(range(backlog, 10**9))
    lock = threading.Lock()

    def worker() -> None:
        while True:
            try:
                item = q.get()
            except ShutDown:
                return
            if item == "low":
                handed.append(clock.monotonic() - added_at)
                q.done(item)
                q.shut_down()
                return
            with lock:
                clock.step(d)
                q.add(f"n{next(counter)}")
            q.done(item)

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert handed, "low item starved"
    assert handed[0] <= MAX_WAIT + (backlog + workers) * d


# -- delays and rate limiting ------------------------------------------------------------------
def test_add_after_keeps_the_priority(make: Make, clock: FakeClock) -> None:
    q = _pq(make, clock)
    q.add_after("low", 1.0, LOW_PRIORITY)
    q.add_after("normal", 2.0)
    step_and_settle(q, clock, 3.0)
    eventually(lambda: len(q) == 2)
    assert _drain(q) == ["normal", "low"]


def test_add_after_dedup_keeps_earliest_time_and_highest_priority(
    make: Make, clock: FakeClock
) -> None:
    q = _pq(make, clock)
    q.add_after("a", 1.0, LOW_PRIORITY)
    q.add_after("a", 5.0)  # later: time unchanged, priority up to NORMAL
    q.add_after("a", 0.5, LOW_PRIORITY)  # earlier: time moves, priority stays NORMAL
    q.add_after("b", 0.5, LOW_PRIORITY)
    step_and_settle(q, clock, 0.5)
    eventually(lambda: len(q) == 2)
    assert q.priority_of("a") == NORMAL_PRIORITY
    assert _drain(q) == ["a", "b"]
    assert q._waiting_count() == 0
    assert q._delayed_priority == {}


def test_add_after_zero_delay_adds_now_at_the_priority(make: Make, clock: FakeClock) -> None:
    q = _pq(make, clock)
    q.add("n")
    q.add_after("low", 0, LOW_PRIORITY)
    q.add_after("high", -1, 5)
    assert _drain(q) == ["high", "n", "low"]


def test_add_rate_limited_with_priority(make: Make, clock: FakeClock) -> None:
    limiter = ItemExponentialFailureRateLimiter(1.0, 100.0)
    q = _pq(make, clock, rate_limiter=limiter)
    q.add_rate_limited("a", LOW_PRIORITY)  # 1s
    q.add_rate_limited("b")  # 1s, NORMAL
    assert q.num_requeues("a") == 1
    step_and_settle(q, clock, 1.0)
    eventually(lambda: len(q) == 2)
    assert _drain(q) == ["b", "a"]
    q.forget("a")
    assert q.num_requeues("a") == 0


# -- metrics ---------------------------------------------------------------------------------
def _value(reg: CollectorRegistry, metric: str) -> float | None:
    return reg.get_sample_value(metric, {"name": "pq"})


def test_metrics_have_client_go_names(make: Make, clock: FakeClock) -> None:
    reg = CollectorRegistry()
    q = _pq(make, clock, name="pq", registry=reg)
    q.add("low", LOW_PRIORITY)
    q.add("n")
    q.add("low")  # move-up: not an add
    q.add("n", LOW_PRIORITY)  # collapsed
    assert _value(reg, "workqueue_adds_total") == 2
    assert _value(reg, "workqueue_depth") == 2
    clock.step(2.0)
    assert q.get() == "low"
    assert _value(reg, "workqueue_depth") == 1
    assert _value(reg, "workqueue_queue_duration_seconds_sum") == 2.0
    q.add("low", LOW_PRIORITY)  # re-added while processing
    assert _value(reg, "workqueue_depth") == 2
    clock.step(3.0)
    q.done("low")
    assert _value(reg, "workqueue_work_duration_seconds_sum") == 3.0
    assert _drain(q) == ["n", "low"]
    assert _value(reg, "workqueue_depth") == 0
    q.add_rate_limited("x", LOW_PRIORITY)
    assert _value(reg, "workqueue_retries_total") == 1


def test_metered_hand_off_to_a_parked_consumer(make: Make, clock: FakeClock) -> None:
    reg = CollectorRegistry()
    q = _pq(make, clock, name="pq", registry=reg)
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append(q.get()))
    t.start()
    eventually(lambda: len(q._parked) == 1)
    q.add("a")
    t.join(5)
    assert got == ["a"]
    assert _value(reg, "workqueue_queue_duration_seconds_count") == 1
    assert _value(reg, "workqueue_depth") == 0


# -- shutdown ----------------------------------------------------------------------------------
def test_shut_down_hands_out_what_is_queued_then_raises(make: Make, clock: FakeClock) -> None:
    q = _pq(make, clock)
    q.add("low", LOW_PRIORITY)
    q.add("n")
    q.shut_down()
    q.add("ignored")
    q.add_after("ignored", 1.0)
    q.add_rate_limited("ignored")
    assert q.shutting_down()
    assert _drain(q) == ["n", "low"]
    with pytest.raises(ShutDown):
        q.get()


def test_shut_down_releases_parked_consumers(make: Make, clock: FakeClock) -> None:
    q = _pq(make, clock)
    errors: list[BaseException] = []

    def consume() -> None:
        try:
            q.get()
        except ShutDown as e:
            errors.append(e)

    t = threading.Thread(target=consume)
    t.start()
    eventually(lambda: len(q._parked) == 1)
    q.shut_down()
    t.join(5)
    assert len(errors) == 1


def test_shut_down_with_drain_waits_for_in_flight_items(make: Make, clock: FakeClock) -> None:
    q = _pq(make, clock)
    q.add("a", LOW_PRIORITY)
    assert q.get() == "a"
    returned = threading.Event()

    def drain() -> None:
        q.shut_down(drain=True)
        returned.set()

    t = threading.Thread(target=drain)
    t.start()
    eventually(q.shutting_down)
    assert not returned.is_set()
    q.done("a")
    t.join(5)
    assert returned.is_set()
