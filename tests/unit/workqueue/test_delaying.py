"""DelayingQueue driven by a FakeClock: ordering, re-adds, shutdown."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyctrl.testing import FakeClock
from pyctrl.workqueue import DelayingQueue
from tests.unit.workqueue.helpers import step_and_settle
from tests.waiting import eventually

Make = Callable[..., Any]


def _drain(q: DelayingQueue[str]) -> list[str]:
    out = []
    while len(q):
        item = q.get()
        q.done(item)
        out.append(item)
    return out


def test_add_after_adds_once_the_delay_has_passed(make: Make, clock: FakeClock) -> None:
    q = make(DelayingQueue, clock=clock)
    q.add_after("a", 1.0)
    step_and_settle(q, clock, 0.5)
    assert len(q) == 0
    step_and_settle(q, clock, 0.5)
    eventually(lambda: len(q) == 1)
    assert q.get() == "a"
    assert q._waiting_count() == 0


def test_items_arrive_in_ready_time_order(make: Make, clock: FakeClock) -> None:
    q = make(DelayingQueue, clock=clock)
    q.add_after("slow", 3.0)
    q.add_after("fast", 1.0)
    q.add_after("mid", 2.0)
    q.add_after("tie", 2.0)  # same time as "mid": call order breaks the tie
    step_and_settle(q, clock, 5.0)
    eventually(lambda: len(q) == 4)
    assert _drain(q) == ["fast", "mid", "tie", "slow"]


def test_step_by_step_each_item_arrives_at_its_time(make: Make, clock: FakeClock) -> None:
    q = make(DelayingQueue, clock=clock)
    q.add_after("b", 2.0)
    q.add_after("a", 1.0)
    step_and_settle(q, clock, 1.0)
    assert _drain(q) == ["a"]
    step_and_settle(q, clock, 1.0)
    assert _drain(q) == ["b"]


def test_readd_with_a_later_time_does_not_postpone(make: Make, clock: FakeClock) -> None:
    q = make(DelayingQueue, clock=clock)
    q.add_after("a", 1.0)
    q.add_after("a", 10.0)
    assert q._waiting_count() == 1
    step_and_settle(q, clock, 1.0)
    assert _drain(q) == ["a"]
    step_and_settle(q, clock, 20.0)
    assert _drain(q) == []  # the later request was folded into the first


def test_readd_with_an_earlier_time_moves_it_earlier(make: Make, clock: FakeClock) -> None:
    q = make(DelayingQueue, clock=clock)
    q.add_after("a", 10.0)
    q.add_after("b", 5.0)
    q.add_after("a", 1.0)
    assert q._waiting_count() == 2
    step_and_settle(q, clock, 1.0)
    assert _drain(q) == ["a"]
    step_and_settle(q, clock, 4.0)
    assert _drain(q) == ["b"]
    step_and_settle(q, clock, 10.0)
    assert _drain(q) == []  # the superseded 10s entry is dead


def test_new_earlier_item_wakes_a_waiter_parked_on_a_later_one(
    make: Make, clock: FakeClock
) -> None:
    q = make(DelayingQueue, clock=clock)
    q.add_after("late", 100.0)
    assert clock.wait_for_waiters(1)
    q.add_after("early", 1.0)
    step_and_settle(q, clock, 1.0)
    assert _drain(q) == ["early"]


def test_non_positive_delay_adds_at_once(make: Make, clock: FakeClock) -> None:
    q = make(DelayingQueue, clock=clock)
    q.add_after("a", 0)
    q.add_after("b", -1.0)
    assert _drain(q) == ["a", "b"]


def test_delayed_item_collapses_with_a_queued_duplicate(make: Make, clock: FakeClock) -> None:
    q = make(DelayingQueue, clock=clock)
    q.add("a")
    q.add_after("a", 1.0)
    step_and_settle(q, clock, 1.0)
    assert _drain(q) == ["a"]


def test_shut_down_stops_the_waiter_and_drops_pending_items(
    make: Make, clock: FakeClock
) -> None:
    q = make(DelayingQueue, clock=clock)
    q.add_after("a", 1.0)
    assert clock.wait_for_waiters(1)
    q.shut_down()
    assert all(not t.is_alive() for t in q._threads)
    clock.step(5.0)
    assert len(q) == 0


def test_add_after_is_ignored_after_shut_down(make: Make, clock: FakeClock) -> None:
    q = make(DelayingQueue, clock=clock)
    q.shut_down()
    q.add_after("a", 1.0)
    q.add_after("b", 0)
    assert q._waiting_count() == 0
    assert len(q) == 0


def test_many_items_with_real_clock_all_arrive(make: Make) -> None:
    q = make(DelayingQueue)
    for i in range(50):
        q.add_after(f"k{i}", 0.001 * (i % 5))
    eventually(lambda: len(q) == 50)
    assert sorted(_drain(q)) == sorted(f"k{i}" for i in range(50))
