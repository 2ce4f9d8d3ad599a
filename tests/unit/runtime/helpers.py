"""Shared helpers for runtime unit tests: condition waits with real-time timeouts."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


def eventually(pred: Callable[[], bool], timeout: float = 5.0, what: str = "") -> None:
    """Wait (real time, bounded) until ``pred()`` is true; fail the test otherwise."""
    deadline = time.monotonic() + timeout
    cond = threading.Condition()
    with cond:
        while not pred():
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met within {timeout}s: {what}")
            cond.wait(0.002)
