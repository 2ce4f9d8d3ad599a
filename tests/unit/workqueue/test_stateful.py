"""Hypothesis state machine: the queue (with and without metrics) against a simple model.

The model is client-go's contract written as plainly as possible: a FIFO list of waiting
items, the set of items being processed, the set re-added while processing, and a shutdown
flag. Every rule runs on one thread, so ``get`` is only called when it can not block.
"""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from prometheus_client import CollectorRegistry

from pyctrl.testing import FakeClock
from pyctrl.workqueue import Queue, ShutDown

KEYS = st.sampled_from(["a", "b", "c", "d", "e"])


class QueueModel(RuleBasedStateMachine):
    metrics = False

    def __init__(self) -> None:
        super().__init__()
        self.q: Queue[str] = Queue(
            name="model", clock=FakeClock(),
            registry=CollectorRegistry() if self.metrics else None,
        )
        self.waiting: list[str] = []
        self.processing: set[str] = set()
        self.readded: set[str] = set()
        self.shut = False
        self.handed_out: list[str] = []

    def teardown(self) -> None:
        self.q.shut_down()

    @rule(item=KEYS)
    def add(self, item: str) -> None:
        self.q.add(item)
        if self.shut:
            return
        if item in self.processing:
            self.readded.add(item)
        elif item not in self.waiting:
            self.waiting.append(item)

    @precondition(lambda self: bool(self.waiting))
    @rule()
    def get(self) -> None:
        got = self.q.get()
        expected = self.waiting.pop(0)
        assert got == expected, "not FIFO"
        assert got not in self.processing, "handed to two workers"
        self.processing.add(got)
        self.handed_out.append(got)

    @precondition(lambda self: bool(self.processing))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        item = data.draw(st.sampled_from(sorted(self.processing)))
        self.q.done(item)
        self.processing.discard(item)
        if item in self.readded:
            self.readded.discard(item)
            self.waiting.append(item)

    @rule(item=KEYS)
    def done_for_an_item_not_in_flight(self, item: str) -> None:
        if item in self.processing:
            return
        self.q.done(item)  # a no-op, unless it was re-added... which needs in-flight

    @rule()
    def shut_down(self) -> None:
        self.q.shut_down()
        self.shut = True

    @precondition(lambda self: not self.processing)
    @rule()
    def shut_down_with_drain(self) -> None:
        self.q.shut_down(drain=True)  # nothing in flight: must return at once
        self.shut = True

    @precondition(lambda self: self.shut and not self.waiting)
    @rule()
    def get_after_shut_down_raises(self) -> None:
        with pytest.raises(ShutDown):
            self.q.get()

    @invariant()
    def lengths_agree(self) -> None:
        assert len(self.q) == len(self.waiting)
        assert self.q.shutting_down() == self.shut

    @invariant()
    def nothing_lost(self) -> None:
        # Every item that needs a run is either waiting or will be re-queued by done.
        with self.q._lock:
            assert self.q._dirty == set(self.waiting) | self.readded
            assert self.q._processing == self.processing


class MeteredQueueModel(QueueModel):
    metrics = True


TestQueueModel = QueueModel.TestCase
TestQueueModel.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestMeteredQueueModel = MeteredQueueModel.TestCase
TestMeteredQueueModel.settings = settings(
    max_examples=60, stateful_step_count=40, deadline=None
)
