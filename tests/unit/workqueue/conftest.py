"""Fixtures for the work queue tests: a FakeClock and queue factories that always shut down."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyctrl.testing import FakeClock
from pyctrl.workqueue import Queue


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make() -> Iterator[Callable[..., Any]]:
    """``make(QueueClass, **kwargs)`` builds a queue that is shut down after the test."""
    made: list[Queue[Any]] = []

    def factory(cls: type[Queue[Any]], **kwargs: Any) -> Any:
        q = cls(**kwargs)
        made.append(q)
        return q

    yield factory
    for q in made:
        q.shut_down()
