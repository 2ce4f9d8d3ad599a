"""OutageGate: a server outage spends no per-item backoff or bucket token; recovery is at once.

Issue 35 item 1: with the default controller rate limiter, every reconcile that failed during
an apiserver outage went through per-item exponential backoff and the shared 10 qps bucket, so
the keys drained at 10/s after the server came back and a CronJob controller missed runs.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator

import pytest
from prometheus_client import CollectorRegistry

from pyctrl.availability import OutageGate, is_unavailable
from pyctrl.controller import Controller
from pyctrl.errors import (
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    ServerError,
    ServerTimeout,
    Timeout,
    TooManyRequests,
    Unreachable,
)
from pyctrl.reconcile import Result
from pyctrl.testing.fake_clock import FakeClock
from tests.threads import running
from tests.waiting import eventually


class Server:
    """A stand-in API server: up or down, counting its answers as pyctrl.kube.answers does."""

    def __init__(self) -> None:
        self.up = True
        self.answers = 0
        self._mu = threading.Lock()

    def count(self) -> int:
        with self._mu:
            return self.answers

    def call(self) -> None:
        with self._mu:
            if not self.up:
                raise Unreachable("connection refused", reason="ConnectionError")
            self.answers += 1


def refused() -> Unreachable:
    return Unreachable("connection refused", reason="ConnectionError")


@pytest.mark.parametrize("err", [
    refused(), Timeout("read timed out"), ServerTimeout("etcd", 504),
    TooManyRequests("slow down", 429), ServerError("unavailable", 503),
    ConnectionResetError("reset"), TimeoutError("t"),
])
def test_server_side_failures_are_unavailable(err: BaseException) -> None:
    assert is_unavailable(err)


@pytest.mark.parametrize("err", [
    NotFound("x", 404), Conflict("x", 409), Invalid("x", 422), ServerError("boom", 500),
    Forbidden("x", 403), RuntimeError("bug"),
])
def test_item_failures_are_not_unavailable(err: BaseException) -> None:
    assert not is_unavailable(err)


def _gate(clock: FakeClock, server: Server) -> OutageGate:
    return OutageGate("demo", clock, initial=0.25, maximum=2.0, startup_window=30.0,
                      answers=server.count)


def test_probes_back_off_to_the_maximum_and_an_answer_reopens() -> None:
    clock, server, stop = FakeClock(), Server(), threading.Event()
    gate = _gate(clock, server)
    server.up = False
    assert gate.failed(refused(), "a")
    assert gate.closed
    delays = []
    for _ in range(6):
        delays.append(round(gate.next_probe_at - clock.monotonic(), 3))
        clock.step(delays[-1])
        assert gate.admit(stop)  # due: this caller is the probe, at once
        assert gate.failed(refused(), "a")  # the probe failed on the server
    assert delays == [0.25, 0.25, 0.5, 1.0, 2.0, 2.0]
    server.up = True
    server.call()
    gate.succeeded("b")
    assert not gate.closed
    assert gate.admit(stop)


def test_a_cache_only_success_does_not_reopen_the_gate() -> None:
    clock, server = FakeClock(), Server()
    gate = _gate(clock, server)
    server.up = False
    assert gate.failed(refused(), "a")
    gate.succeeded("not-due")  # a reconcile that read only the cache
    assert gate.closed
    assert gate.failed(NotFound("gone", 404), "c") is False  # the server answered
    assert not gate.closed


def test_a_key_failing_alone_while_others_are_answered_is_rate_limited() -> None:
    clock, server = FakeClock(), Server()
    gate = _gate(clock, server)
    server.call()
    assert gate.failed(ServerError("aggregated API down", 503), "ns/lonely")
    server.call()
    gate.succeeded("ns/other")
    assert not gate.closed
    assert gate.failed(ServerError("aggregated API down", 503), "ns/lonely") is False
    assert not gate.closed


def test_forbidden_counts_as_the_server_starting_only_near_an_outage() -> None:
    clock, server = FakeClock(), Server()
    gate = _gate(clock, server)
    assert gate.failed(Forbidden("rbac", 403), "a") is False  # no outage: a real 403
    server.up = False
    assert gate.failed(refused(), "a")
    assert gate.failed(Forbidden("rbac not ready", 403), "b")  # while closed
    server.up = True
    server.call()
    gate.succeeded("c")
    assert not gate.closed
    clock.step(10)
    assert gate.failed(Forbidden("rbac not ready", 403), "d")  # right after it reopened
    server.call()
    gate.succeeded("e")
    clock.step(31)
    assert gate.failed(Forbidden("denied", 403), "f") is False


class Flaky:
    """Every reconcile calls the server once; records successes per key."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.done: set[str] = set()
        self.calls = 0
        self._mu = threading.Lock()

    def reconcile(self, request: Hashable) -> Result | None:
        key = str(request)
        with self._mu:
            self.calls += 1
        self.server.call()
        with self._mu:
            self.done.add(key)
        return None


@pytest.fixture
def outage() -> Iterator[tuple[Controller[str], Flaky, Server, FakeClock]]:
    clock, server = FakeClock(), Server()
    flaky = Flaky(server)
    controller: Controller[str] = Controller(
        "demo", flaky, workers=4, clock=clock, registry=CollectorRegistry(),
        gate=_gate(clock, server))
    with running(controller.run, name="controller-run", join_timeout=5):
        yield controller, flaky, server, clock


def test_keys_failed_in_an_outage_drain_at_once_when_it_ends(
    outage: tuple[Controller[str], Flaky, Server, FakeClock],
) -> None:
    controller, flaky, server, clock = outage
    keys = [f"ns/cj-{i:04d}" for i in range(500)]
    server.up = False
    for key in keys:
        controller.queue.add(key)
    # The first failures close the gate: the four workers wait on it, each holding a key,
    # and the other keys stay in the queue untouched.
    assert clock.wait_for_waiters(4), "the workers should wait on the gate"
    assert flaky.calls <= 4
    # 20 s of outage: only probes reach the server.
    for _ in range(200):
        clock.step(0.1)
        assert clock.wait_for_waiters(4)
    assert flaky.calls < 30, f"{flaky.calls} reconciles during the outage: probes only"
    assert not flaky.done
    server.up = True
    clock.step(2.0)  # the next probe is due within the maximum probe delay
    # Then everything drains with no further clock step: no key waits on a backoff.
    eventually(lambda: flaky.done == set(keys), what="every key reconciled after the outage")
    assert all(controller.queue.num_requeues(k) == 0 for k in keys)
