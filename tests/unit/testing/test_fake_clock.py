"""FakeClock: time moves only on step/set_time, and a waiter never misses a step."""

from __future__ import annotations

import threading

from pyctrl.testing import FakeClock
from tests.waiting import poll


def _waits_in_thread(clock: FakeClock, before_wait: threading.Event,
                     go: threading.Event) -> tuple[threading.Thread, list[float]]:
    """A thread that reads the time, signals ``before_wait``, waits for ``go`` (the test
    may step the clock meanwhile), then waits on the clock for the 10 fake seconds it worked
    out from that reading, re-reading the time after each wake-up until they have passed;
    records when it got there."""
    cond = threading.Condition(threading.Lock())
    reached: list[float] = []

    def run() -> None:
        with cond:
            now = clock.monotonic()
            deadline = now + 10
            before_wait.set()
            go.wait(5)
            while True:  # a run loop: wait from the reading, then read again
                clock.wait(cond, deadline - now)
                if (now := clock.monotonic()) >= deadline:
                    break
            reached.append(now)

    thread = threading.Thread(target=run, name="waiter", daemon=True)  # never hangs a run
    thread.start()
    return thread, reached


def test_a_step_between_reading_the_time_and_waiting_is_not_lost() -> None:
    """The step lands after the waiter read the time and before it registered its wait: the
    wait returns at once and the waiter sees its deadline passed (before, it slept on the
    stale deadline until some later step, and a test stepping once hung)."""
    clock = FakeClock()
    before_wait, go = threading.Event(), threading.Event()
    thread, reached = _waits_in_thread(clock, before_wait, go)
    assert before_wait.wait(5)
    assert clock.waiters() == 0, "read the time, not waiting yet"
    clock.step(10)
    go.set()
    thread.join(5)
    assert not thread.is_alive(), "the step before the wait was lost"
    assert reached == [1010.0]


def test_a_waiter_with_a_current_reading_stays_parked_until_its_deadline() -> None:
    clock = FakeClock()
    before_wait, go = threading.Event(), threading.Event()
    go.set()
    thread, reached = _waits_in_thread(clock, before_wait, go)
    assert clock.wait_for_waiters(1)
    clock.step(4)  # wakes it; it re-reads 1004 and parks again
    assert poll(lambda: clock.waiters() == 1 and thread.is_alive(), timeout=5)
    assert reached == []
    clock.step(6)
    thread.join(5)
    assert not thread.is_alive() and reached == [1010.0]
