"""Hypothesis state machine: PriorityQueue (with and without metrics) against a plain model.

The model is the module contract written as plainly as possible: waiting items with their
priority, queued time and entry order; the next item is the one with the smallest
``rank = queued - priority * max_wait / 100`` (ties: entry order); re-adds never lower a
priority; items re-added while processing enter the queue at ``done``. Time moves through a
FakeClock rule, so aging is exercised. Every rule runs on one thread.
"""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from prometheus_client import CollectorRegistry

from pyctrl.testing import FakeClock
from pyctrl.workqueue import LOW_PRIORITY, NORMAL_PRIORITY, PriorityQueue, ShutDown

KEYS = st.sampled_from(["a", "b", "c", "d", "e"])
PRIORITIES = st.sampled_from([LOW_PRIORITY, -50, NORMAL_PRIORITY, 10])
MAX_WAIT = 10.0


class PriorityQueueModel(RuleBasedStateMachine):
    metrics = False

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.q: PriorityQueue[str] = PriorityQueue(
            name="model", clock=self.clock, max_wait=MAX_WAIT,
            registry=CollectorRegistry() if self.metrics else None,
        )
        # item -> (priority, queued time, entry order)
        self.waiting: dict[str, tuple[int, float, int]] = {}
        self.processing: set[str] = set()
        self.readded: dict[str, tuple[int, float]] = {}
        self.order = 0
        self.shut = False

    def teardown(self) -> None:
        self.q.shut_down()

    def _enter(self, item: str, priority: int, queued: float) -> None:
        self.order += 1
        self.waiting[item] = (priority, queued, self.order)

    @rule(item=KEYS, priority=PRIORITIES)
    def add(self, item: str, priority: int) -> None:
        self.q.add(item, priority)
        if self.shut:
            return
        now = self.clock.monotonic()
        if item in self.waiting:
            p, queued, order = self.waiting[item]
            self.waiting[item] = (max(p, priority), queued, order)
        elif item in self.readded:
            p, queued = self.readded[item]
            self.readded[item] = (max(p, priority), queued)
        elif item in self.processing:
            self.readded[item] = (priority, now)
        else:
            self._enter(item, priority, now)

    @rule(item=KEYS)
    def add_plain(self, item: str) -> None:
        """A one-argument add, as RateLimitingQueue users write it: NORMAL."""
        self.add(item, NORMAL_PRIORITY)

    @rule(seconds=st.sampled_from([0.5, 1.0, 5.0, MAX_WAIT]))
    def step(self, seconds: float) -> None:
        self.clock.step(seconds)

    @precondition(lambda self: bool(self.waiting))
    @rule()
    def get(self) -> None:
        got = self.q.get()

        def key(item: str) -> tuple[float, int]:
            p, queued, order = self.waiting[item]
            return (queued - p * MAX_WAIT / 100, order)

        expected = min(self.waiting, key=key)
        assert got == expected, f"got {got}, model says {expected}: {self.waiting}"
        assert got not in self.processing, "handed to two workers"
        del self.waiting[got]
        self.processing.add(got)

    @precondition(lambda self: bool(self.processing))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        item = data.draw(st.sampled_from(sorted(self.processing)))
        self.q.done(item)
        self.processing.discard(item)
        if item in self.readded:
            p, queued = self.readded.pop(item)
            self._enter(item, p, queued)

    @rule(roll=st.integers(0, 7))
    def shut_down(self, roll: int) -> None:
        if roll:  # rarely: a shut-down queue has little left to check
            return
        self.q.shut_down()
        self.shut = True

    @precondition(lambda self: self.shut and not self.waiting)
    @rule()
    def get_after_shut_down_raises(self) -> None:
        with pytest.raises(ShutDown):
            self.q.get()

    @invariant()
    def agrees_with_the_model(self) -> None:
        assert len(self.q) == len(self.waiting)
        assert self.q.shutting_down() == self.shut
        for item, (p, _, _) in self.waiting.items():
            assert self.q.priority_of(item) == p
        for item, (p, _) in self.readded.items():
            assert self.q.priority_of(item) == p
        with self.q._lock:
            assert self.q._dirty == set(self.waiting) | set(self.readded)
            assert self.q._processing == self.processing


class MeteredPriorityQueueModel(PriorityQueueModel):
    metrics = True


TestPriorityQueueModel = PriorityQueueModel.TestCase
TestPriorityQueueModel.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None
)
TestMeteredPriorityQueueModel = MeteredPriorityQueueModel.TestCase
TestMeteredPriorityQueueModel.settings = settings(
    max_examples=50, stateful_step_count=40, deadline=None
)
