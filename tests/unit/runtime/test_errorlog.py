"""pyctrl._errorlog: expected API errors are one line each and sampled; tracebacks are rare."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from pyctrl._errorlog import ErrorLog, classify, describe
from pyctrl.controller import Controller
from pyctrl.errors import (
    Conflict,
    NotFound,
    NotLeader,
    ServerError,
    TooManyRequests,
    Unreachable,
)
from pyctrl.reconcile import Request
from pyctrl.testing import FakeClock
from tests.threads import running
from tests.waiting import eventually

EVENT = "reconcile failed; requeueing with backoff"


def _raise(err: BaseException) -> BaseException:
    """``err`` with a traceback, as an ``except`` block sees it."""
    try:
        raise err
    except BaseException as caught:
        return caught


def _bug() -> BaseException:
    try:
        empty: dict[str, int] = {}
        empty["missing"] += 1  # the bug under test
    except KeyError as caught:
        return caught
    raise AssertionError("unreachable")


@pytest.mark.parametrize("err", [
    ConnectionRefusedError(111, "Connection refused"), ConnectionResetError(),
    TimeoutError("timed out"), Unreachable("GET /x: refused", reason="ConnectionError"),
    NotFound("gone", 404, "NotFound"), Conflict("stale", 409, "Conflict"),
    TooManyRequests("slow down", 429, "TooManyRequests", retry_after=1.0),
    ServerError("boom", 503, "ServiceUnavailable"), NotLeader("lease lost"),
])
def test_api_and_transport_errors_are_expected(err: BaseException) -> None:
    assert classify(err) == "expected"


@pytest.mark.parametrize("err", [KeyError("x"), ValueError("bad"), AttributeError("a"),
                                 RuntimeError("r")])
def test_other_exceptions_are_unexpected(err: BaseException) -> None:
    assert classify(err) == "unexpected"


def test_describe_names_class_status_and_message() -> None:
    assert describe(NotFound("cronjobs \"a\" not found", 404, "NotFound")) == {
        "error": "NotFound", "status": 404, "reason": "NotFound",
        "message": "cronjobs \"a\" not found"}
    assert describe(ConnectionRefusedError(111, "Connection refused"))["message"] == (
        "[Errno 111] Connection refused")
    assert len(describe(ValueError("x" * 10_000))["message"]) < 600


def test_connection_refused_flood_is_a_few_lines_without_traceback() -> None:
    clock = FakeClock()
    errors = ErrorLog(clock=clock, burst=5, interval=10.0)
    with capture_logs() as logs:
        for _ in range(1000):  # 1000 failures within one second
            errors.failure(EVENT, _raise(ConnectionRefusedError(111, "Connection refused")),
                           key="ns/a")
    assert len(logs) == 5
    for entry in logs:
        assert "exc_info" not in entry
        assert entry["error"] == "ConnectionRefusedError"
        assert entry["status"] == 0
        assert "Connection refused" in entry["message"]
        assert entry["key"] == "ns/a"
        assert entry["log_level"] == "error"
    clock.step(10.0)  # the next window reports how many lines it left out
    with capture_logs() as logs:
        errors.failure(EVENT, Unreachable("GET /x: refused", reason="ConnectionError"))
        errors.failure(EVENT, _raise(ConnectionRefusedError(111, "Connection refused")))
    assert [e["error"] for e in logs] == ["Unreachable", "ConnectionRefusedError"]
    assert "suppressed" not in logs[0]  # another signature: nothing of its own was left out
    assert logs[1]["suppressed"] == 995


def test_an_outage_of_a_minute_costs_lines_per_window_not_per_failure() -> None:
    clock = FakeClock()
    errors = ErrorLog(clock=clock)
    with capture_logs() as logs:
        for _ in range(600):  # ten failures a second for a minute
            errors.failure(EVENT, Unreachable("GET /x: refused", reason="ConnectionError"))
            clock.step(0.1)
    assert 5 <= len(logs) <= 5 * 7
    assert sum(e.get("suppressed", 0) for e in logs) + len(logs) <= 600


def test_unexpected_error_has_a_traceback_once_per_minute_per_signature() -> None:
    clock = FakeClock()
    errors = ErrorLog(clock=clock, burst=5, interval=10.0, traceback_interval=60.0)
    with capture_logs() as logs:
        for _ in range(20):
            errors.failure(EVENT, _bug())
    with_tb = [e for e in logs if "exc_info" in e]
    assert len(with_tb) == 1
    assert isinstance(with_tb[0]["exc_info"], KeyError)
    assert len(logs) == 5  # the traceback line plus four one-liners, then sampled
    assert all(e["error"] == "KeyError" and "test_errorlog.py" in e["at"] for e in logs)
    clock.step(30.0)
    with capture_logs() as logs:
        errors.failure(EVENT, _bug())
    assert "exc_info" not in logs[0]
    assert logs[0]["suppressed"] == 15
    clock.step(30.0)  # a minute after the first traceback
    with capture_logs() as logs:
        errors.failure(EVENT, _bug())
        errors.failure(EVENT, _bug())
    assert ["exc_info" in e for e in logs] == [True, False]


def test_distinct_locations_each_get_their_traceback() -> None:
    def other_bug() -> BaseException:
        try:
            int("not a number")
        except ValueError as caught:
            return caught
        raise AssertionError("unreachable")

    errors = ErrorLog(clock=FakeClock())
    with capture_logs() as logs:
        errors.failure(EVENT, _bug())
        errors.failure(EVENT, other_bug())
        errors.failure(EVENT, _raise(KeyError("elsewhere")))
    assert ["exc_info" in e for e in logs] == [True, True, True]


def test_a_traceback_is_written_even_when_the_line_budget_is_spent() -> None:
    clock = FakeClock()
    errors = ErrorLog(clock=clock, burst=2, interval=1000.0, traceback_interval=60.0)
    with capture_logs() as logs:
        for _ in range(10):
            errors.failure(EVENT, _bug())
        clock.step(60.0)
        errors.failure(EVENT, _bug())
    assert ["exc_info" in e for e in logs] == [True, False, True]
    assert logs[-1]["suppressed"] == 8


def test_level_and_fields_pass_through() -> None:
    errors = ErrorLog(clock=FakeClock())
    with capture_logs() as logs:
        errors.failure("watch failed, backing off", TimeoutError("read timed out"),
                       level="info", reflector="jobs", delay=0.8)
    entry = logs[0]
    assert (entry["log_level"], entry["reflector"], entry["delay"]) == ("info", "jobs", 0.8)


def test_signatures_are_bounded() -> None:
    clock = FakeClock()
    errors = ErrorLog(clock=clock, burst=1, max_signatures=3)
    with capture_logs() as logs:
        for i in range(10):
            errors.failure(f"event {i}", ValueError("x"))
        errors.failure("event 0", ValueError("x"))  # forgotten: written again
    assert len(logs) == 11
    assert len(errors._seen) == 3


@pytest.mark.parametrize("kw", [{"burst": 0}, {"interval": 0.0}, {"traceback_interval": -1.0},
                                {"max_signatures": 0}])
def test_bad_settings_are_refused(kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ErrorLog(**kw)


def test_controller_logs_a_refused_connection_flood_as_a_few_one_liners() -> None:
    """The worker loop goes through ErrorLog, and the outage gate holds the workers: 200 keys
    meeting a refused connection cost a few one-liners and a few reconciles, no traceback."""
    calls: list[str] = []

    class Refused:
        def reconcile(self, request: Request) -> None:
            calls.append(str(request))
            raise ConnectionRefusedError(111, "Connection refused")

    registry = CollectorRegistry()
    clock = FakeClock()
    controller = Controller("flood", Refused(), workers=2, clock=clock, registry=registry)
    with capture_logs() as logs, running(controller.run, name="flood-run", join_timeout=5):
        idle = clock.waiters()  # the delaying queue's loop
        for i in range(200):
            controller.queue.add(Request("ns", f"cj-{i}"))
        eventually(lambda: len(calls) >= 1)
        for _ in range(40):  # 20 s of probes, each refused
            assert clock.wait_for_waiters(idle + 2)
            clock.step(0.5)
        assert clock.wait_for_waiters(idle + 2)
    assert len(calls) < 30, "the gate lets only probes through during the outage"
    failures = [e for e in logs if e["event"].startswith("reconcile failed")]
    assert 1 <= len(failures) <= 5
    # (controller, key and reconcile_id come from the contextvars, which capture_logs skips)
    assert all("exc_info" not in e and e["error"] == "ConnectionRefusedError"
               and "Connection refused" in e["message"] for e in failures)
    assert [e["event"] for e in logs].count(
        "the API server is unavailable; pausing workers until it answers") == 1


def test_a_mapper_bug_hit_by_every_event_logs_one_traceback() -> None:
    """The event handler goes through ErrorLog: 100 events into a broken mapper."""
    from pyctrl.handlers import MapHandler
    from pyctrl.workqueue import RateLimitingQueue

    def broken(obj: dict[str, Any]) -> list[Any]:
        return [obj["metadata"]["no-such-field"]]

    queue: RateLimitingQueue[Any] = RateLimitingQueue(name="mapper-bug", clock=FakeClock(),
                                                      registry=CollectorRegistry())
    handler = MapHandler(queue, broken)
    with capture_logs() as logs:
        for i in range(100):
            handler.on_add({"metadata": {"name": f"o-{i}", "namespace": "ns"}}, False)
    queue.shut_down()
    assert ["exc_info" in e for e in logs] == [True, False, False, False, False]
    assert all(e["error"] == "KeyError" for e in logs)
