"""retry_on_conflict re-reads and re-applies on 409, gives up with the last error."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pyctrl import DEFAULT_BACKOFF, DEFAULT_RETRY, Backoff, on_error, retry_on_conflict
from pyctrl.errors import Conflict, NotFound
from pyctrl.kube.interface import RawObject
from pyctrl.kube.resource import CONFIGMAPS
from pyctrl.kube.status import new_conflict
from pyctrl.testing import FakeClient, FakeClock
from pyctrl.testing.fake_client import Action


class SleepRecorder(FakeClock):
    """A FakeClock whose sleeps return at once, advancing time and recording the wait."""

    def __init__(self) -> None:
        super().__init__()
        self.slept: list[float] = []

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        if stop.is_set():
            return True
        self.slept.append(seconds)
        self.step(seconds)
        return False


def conflicts(n: int) -> Any:
    """A reactor failing the first ``n`` updates with a real 409 Status error."""
    left = [n]

    def react(action: Action) -> None:
        if left[0] > 0:
            left[0] -= 1
            raise new_conflict(CONFIGMAPS, str(action.name), "the object has been modified")

    return react


def bump(client: FakeClient) -> RawObject:
    current = client.get(CONFIGMAPS, "cm", "default")
    current["data"] = {"n": str(int(current["data"]["n"]) + 1)}
    return client.update(CONFIGMAPS, current, "default")


@pytest.fixture
def setup() -> tuple[FakeClient, SleepRecorder]:
    clock = SleepRecorder()
    client = FakeClient(clock)
    client.create(CONFIGMAPS, {"metadata": {"name": "cm"}, "data": {"n": "0"}}, "default")
    return client, clock


def test_conflicts_are_retried_with_a_fresh_read_until_success(
        setup: tuple[FakeClient, SleepRecorder]) -> None:
    client, clock = setup
    client.prepend_reactor("update", CONFIGMAPS, conflicts(3))
    result = retry_on_conflict(lambda: bump(client), clock=clock)
    assert result["data"] == {"n": "1"}
    gets = [a for a in client.actions if a.verb == "get"]
    updates = [a for a in client.actions if a.verb == "update"]
    assert len(gets) == 4 and len(updates) == 4  # every attempt re-read first
    assert len(clock.slept) == 3
    assert all(0.010 <= s <= 0.011 for s in clock.slept)  # 10 ms, jitter 0.1


def test_gives_up_after_the_steps_with_the_last_conflict(
        setup: tuple[FakeClient, SleepRecorder]) -> None:
    client, clock = setup
    client.prepend_reactor("update", CONFIGMAPS, conflicts(100))
    with pytest.raises(Conflict):
        retry_on_conflict(lambda: bump(client), clock=clock)
    assert len([a for a in client.actions if a.verb == "update"]) == DEFAULT_RETRY.steps
    assert len(clock.slept) == DEFAULT_RETRY.steps - 1
    assert client.get(CONFIGMAPS, "cm", "default")["data"] == {"n": "0"}


def test_other_errors_are_not_retried(setup: tuple[FakeClient, SleepRecorder]) -> None:
    client, clock = setup
    calls = []

    def missing() -> RawObject:
        calls.append(1)
        return client.get(CONFIGMAPS, "nope", "default")

    with pytest.raises(NotFound):
        retry_on_conflict(missing, clock=clock)
    assert calls == [1] and clock.slept == []


def test_stop_ends_the_wait_and_raises_the_last_error(
        setup: tuple[FakeClient, SleepRecorder]) -> None:
    client, clock = setup
    client.prepend_reactor("update", CONFIGMAPS, conflicts(100))
    stop = threading.Event()
    stop.set()
    with pytest.raises(Conflict):
        retry_on_conflict(lambda: bump(client), clock=clock, stop=stop)
    assert len([a for a in client.actions if a.verb == "update"]) == 1


def test_exponential_backoff_delays_and_cap() -> None:
    assert DEFAULT_BACKOFF.delays(lambda: 0.0) == pytest.approx([0.010, 0.050, 0.250])
    assert DEFAULT_RETRY.delays(lambda: 1.0) == pytest.approx([0.011] * 4)
    capped = Backoff(steps=4, duration=1.0, factor=10.0, cap=5.0)
    assert capped.delays() == [1.0, 5.0, 5.0]


def test_on_error_uses_the_predicate() -> None:
    clock = SleepRecorder()
    attempts: list[int] = []

    def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise ValueError("not yet")
        return "ok"

    assert on_error(Backoff(steps=3, duration=0.5), lambda e: isinstance(e, ValueError), flaky,
                    clock=clock) == "ok"
    assert clock.slept == [0.5, 0.5]


@pytest.mark.parametrize("bad", [{"steps": 0, "duration": 1.0}, {"steps": 1, "duration": -1.0},
                                 {"steps": 1, "duration": 1.0, "cap": -1.0}])
def test_invalid_backoff_is_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(**bad)  # type: ignore[arg-type]
