"""Queue: fair, stingy, blocking get, shutdown and drain."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from pyctrl.workqueue import Queue, ShutDown
from tests.waiting import eventually

Make = Callable[..., Any]


def _parked(q: Queue[Any]) -> int:
    with q._lock:
        return len(q._parked)


class _Getter:
    """A thread blocked in ``q.get()`` that records what it got (or ShutDown)."""

    def __init__(self, q: Queue[Any]) -> None:
        self.result: object = None
        self.thread = threading.Thread(target=self._run, args=(q,), name="test-getter")
        self.thread.start()

    def _run(self, q: Queue[Any]) -> None:
        try:
            self.result = q.get()
        except ShutDown as e:
            self.result = e

    def join(self) -> object:
        self.thread.join(5)
        assert not self.thread.is_alive()
        return self.result


def test_get_returns_items_in_the_order_they_were_added(make: Make) -> None:
    q = make(Queue)
    for k in ["a", "b", "c"]:
        q.add(k)
    assert [q.get(), q.get(), q.get()] == ["a", "b", "c"]


def test_duplicate_adds_collapse_and_keep_the_first_position(make: Make) -> None:
    q = make(Queue)
    for k in ["a", "b", "a", "c", "b"]:
        q.add(k)
    assert len(q) == 3
    assert [q.get(), q.get(), q.get()] == ["a", "b", "c"]
    assert len(q) == 0


def test_item_added_while_processing_is_not_handed_out_until_done(make: Make) -> None:
    q = make(Queue)
    q.add("a")
    assert q.get() == "a"
    q.add("a")
    q.add("a")
    assert len(q) == 0  # stingy: a second worker can not get it now
    q.add("b")
    assert q.get() == "b"
    q.done("a")
    assert len(q) == 1  # once, despite two re-adds
    assert q.get() == "a"
    q.done("a")
    q.done("b")
    assert len(q) == 0


def test_done_without_readd_does_not_requeue(make: Make) -> None:
    q = make(Queue)
    q.add("a")
    q.done(q.get())
    assert len(q) == 0
    q.add("a")  # a fresh add after done is a new run
    assert q.get() == "a"


def test_done_for_an_unknown_item_is_harmless(make: Make) -> None:
    q = make(Queue)
    q.done("never-added")
    q.add("a")
    assert q.get() == "a"


def test_get_blocks_until_an_item_is_added(make: Make) -> None:
    q = make(Queue)
    getter = _Getter(q)
    eventually(lambda: _parked(q) == 1)
    assert getter.thread.is_alive()
    q.add("a")
    assert getter.join() == "a"
    assert len(q) == 0
    q.add("a")  # handed-off items are processing: stingy still holds
    assert len(q) == 0
    q.done("a")
    assert q.get() == "a"


def test_one_add_wakes_exactly_one_blocked_getter(make: Make) -> None:
    q = make(Queue)
    first, second = _Getter(q), _Getter(q)
    eventually(lambda: _parked(q) == 2)
    q.add("a")
    eventually(lambda: _parked(q) == 1)
    # The longest-waiting consumer is served first.
    assert first.join() == "a"
    assert second.thread.is_alive()
    q.add("b")
    assert second.join() == "b"


def test_done_hands_a_readded_item_to_a_blocked_getter(make: Make) -> None:
    q = make(Queue)
    q.add("a")
    assert q.get() == "a"
    q.add("a")
    getter = _Getter(q)
    eventually(lambda: _parked(q) == 1)
    q.done("a")
    assert getter.join() == "a"


def test_shut_down_releases_blocked_getters(make: Make) -> None:
    q = make(Queue)
    getters = [_Getter(q) for _ in range(3)]
    eventually(lambda: _parked(q) == 3)
    q.shut_down()
    assert all(isinstance(g.join(), ShutDown) for g in getters)
    assert q.shutting_down()


def test_get_after_shut_down_hands_out_what_is_queued_then_raises(make: Make) -> None:
    q = make(Queue)
    q.add("a")
    q.add("b")
    q.shut_down()
    assert q.get() == "a"
    assert q.get() == "b"
    with pytest.raises(ShutDown):
        q.get()


def test_adds_after_shut_down_are_ignored(make: Make) -> None:
    q = make(Queue)
    q.add("a")
    assert q.get() == "a"
    q.shut_down()
    q.add("b")
    q.add("a")  # not even the dirty mark of an in-flight item
    q.done("a")
    assert len(q) == 0
    with pytest.raises(ShutDown):
        q.get()


def test_shut_down_with_drain_waits_for_in_flight_items(make: Make) -> None:
    q = make(Queue)
    q.add("a")
    q.add("b")
    a, b = q.get(), q.get()
    drainer = threading.Thread(target=q.shut_down, kwargs={"drain": True}, name="drainer")
    drainer.start()
    eventually(q.shutting_down)
    q.done(a)
    assert drainer.is_alive()  # "b" is still in flight: it can not have returned
    q.done(b)
    drainer.join(5)
    assert not drainer.is_alive()


def test_shut_down_with_drain_returns_at_once_when_idle(make: Make) -> None:
    q = make(Queue)
    q.shut_down(drain=True)
    assert q.shutting_down()


def test_plain_shut_down_stops_a_waiting_drain(make: Make) -> None:
    q = make(Queue)
    q.add("a")
    q.get()
    drainer = threading.Thread(target=q.shut_down, kwargs={"drain": True}, name="drainer")
    drainer.start()
    eventually(q.shutting_down)
    q.shut_down()
    drainer.join(5)
    assert not drainer.is_alive()


def test_unhashable_item_raises_and_leaves_the_queue_usable(make: Make) -> None:
    q = make(Queue)
    with pytest.raises(TypeError):
        q.add(["not", "hashable"])
    q.add("a")
    assert q.get() == "a"


def test_shut_down_is_idempotent(make: Make) -> None:
    q = make(Queue)
    q.shut_down()
    q.shut_down(drain=True)
    assert q.shutting_down()


def test_queue_without_registry_uses_the_metric_free_methods(make: Make) -> None:
    q = make(Queue)
    assert "add" not in vars(q) and "get" not in vars(q) and "done" not in vars(q)
    assert q._threads == []


class _CountingLock:
    """Stands in for a queue's lock and counts how often it is taken."""

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock
        self.acquired = 0

    def acquire(self) -> bool:
        self.acquired += 1
        return self.lock.acquire()

    def release(self) -> None:
        self.lock.release()


def test_adding_a_dirty_item_collapses_without_taking_the_lock() -> None:
    q: Queue[str] = Queue()
    q.add("a")  # queued
    q.add("b")
    assert q.get() == "a"
    q.add("a")  # processing, now dirty too
    counting = _CountingLock(q._lock)
    q._lock = counting  # type: ignore[assignment]
    q.add("a")
    q.add("b")
    assert counting.acquired == 0
    q.add("c")  # not dirty: the locked path
    assert counting.acquired == 1
    q._lock = counting.lock
    assert len(q) == 2
    q.done("a")
    assert [q.get(), q.get(), q.get()] == ["b", "c", "a"]
