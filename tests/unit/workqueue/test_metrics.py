"""Queue metrics on a private CollectorRegistry, with a FakeClock."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from pyctrl.testing import FakeClock
from pyctrl.workqueue import ItemExponentialFailureRateLimiter, Queue, RateLimitingQueue
from tests.waiting import eventually

Make = Callable[..., Any]


def _value(reg: CollectorRegistry, metric: str, name: str = "q") -> float | None:
    return reg.get_sample_value(metric, {"name": name})


def test_adds_depth_and_durations(make: Make, clock: FakeClock) -> None:
    reg = CollectorRegistry()
    q = make(Queue, name="q", clock=clock, registry=reg)
    q.add("a")
    q.add("a")  # collapsed: not an add
    q.add("b")
    assert _value(reg, "workqueue_adds_total") == 2
    assert _value(reg, "workqueue_depth") == 2
    clock.step(2.0)
    assert q.get() == "a"
    assert _value(reg, "workqueue_depth") == 1
    assert _value(reg, "workqueue_queue_duration_seconds_count") == 1
    assert _value(reg, "workqueue_queue_duration_seconds_sum") == 2.0
    clock.step(3.0)
    q.done("a")
    assert _value(reg, "workqueue_work_duration_seconds_count") == 1
    assert _value(reg, "workqueue_work_duration_seconds_sum") == 3.0


def test_readd_while_processing_counts_and_requeues(make: Make, clock: FakeClock) -> None:
    reg = CollectorRegistry()
    q = make(Queue, name="q", clock=clock, registry=reg)
    q.add("a")
    q.get()
    clock.step(1.0)
    q.add("a")
    assert _value(reg, "workqueue_adds_total") == 2
    assert _value(reg, "workqueue_depth") == 1  # client-go counts the dirty in-flight item
    clock.step(1.0)
    q.done("a")
    assert q.get() == "a"
    assert _value(reg, "workqueue_depth") == 0
    # Queued since the re-add (1s ago), not since the first add.
    assert _value(reg, "workqueue_queue_duration_seconds_sum") == 1.0


def test_unfinished_work_gauges_are_updated_periodically(make: Make, clock: FakeClock) -> None:
    reg = CollectorRegistry()
    q = make(Queue, name="q", clock=clock, registry=reg)
    q.add("a")
    q.add("b")
    q.get()
    clock.step(1.0)
    q.get()
    assert clock.wait_for_waiters(1)  # the updater sleeps on the clock
    clock.step(2.0)
    eventually(lambda: _value(reg, "workqueue_unfinished_work_seconds") == 5.0)
    assert _value(reg, "workqueue_longest_running_processor_seconds") == 3.0
    q.done("a")
    q.done("b")
    clock.step(0.5)
    eventually(lambda: _value(reg, "workqueue_unfinished_work_seconds") == 0.0)
    assert _value(reg, "workqueue_longest_running_processor_seconds") == 0.0


def test_retries_are_counted(make: Make, clock: FakeClock) -> None:
    reg = CollectorRegistry()
    q = make(
        RateLimitingQueue, name="q", clock=clock, registry=reg,
        rate_limiter=ItemExponentialFailureRateLimiter(1.0, 10.0),
    )
    q.add_rate_limited("a")
    q.add_rate_limited("b")
    assert _value(reg, "workqueue_retries_total") == 2


def test_queues_sharing_a_registry_get_their_own_labels(make: Make, clock: FakeClock) -> None:
    reg = CollectorRegistry()
    one = make(Queue, name="one", clock=clock, registry=reg)
    two = make(Queue, name="two", clock=clock, registry=reg)
    one.add("a")
    two.add("a")
    two.add("b")
    assert _value(reg, "workqueue_adds_total", "one") == 1
    assert _value(reg, "workqueue_adds_total", "two") == 2


def test_handoff_to_a_blocked_getter_is_measured(make: Make, clock: FakeClock) -> None:
    reg = CollectorRegistry()
    q = make(Queue, name="q", clock=clock, registry=reg)
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append(q.get()), name="getter")
    t.start()
    eventually(lambda: len(q._parked) == 1)
    q.add("a")
    t.join(5)
    assert got == ["a"]
    assert _value(reg, "workqueue_depth") == 0
    assert _value(reg, "workqueue_queue_duration_seconds_count") == 1
    clock.step(1.5)
    q.done("a")
    assert _value(reg, "workqueue_work_duration_seconds_sum") == 1.5


def test_metrics_thread_is_joined_at_shut_down(clock: FakeClock) -> None:
    q: Queue[str] = Queue(name="q", clock=clock, registry=CollectorRegistry())
    assert [t.is_alive() for t in q._threads] == [True]
    q.shut_down()
    assert [t.is_alive() for t in q._threads] == [False]
