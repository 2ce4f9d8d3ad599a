"""A fenced write is re-checked after the client-side rate limiter, right before the send."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from pyctrl.errors import NotLeader
from pyctrl.kube import FencedClient, RESTClient
from pyctrl.kube.config import KubeConfig
from pyctrl.kube.guard import check_write, guarded
from pyctrl.kube.resource import CONFIGMAPS
from pyctrl.testing import FakeClock
from tests.unit.kube.http_stub import Reply, StubServer


class Holder:
    def __init__(self) -> None:
        self.valid = True

    def holds_lease(self) -> bool:
        return self.valid

    def describe(self) -> str:
        return "Lease test/leader"


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer()
    server.respond = lambda req: Reply(body=req.json() if req.body else {"kind": "Status"})
    yield server
    server.stop()


def cm(name: str) -> dict[str, object]:
    return {"metadata": {"name": name}, "data": {}}


def test_lease_lost_while_waiting_in_the_rate_limiter_refuses_the_send(
        stub: StubServer) -> None:
    clock = FakeClock()
    rest = RESTClient(KubeConfig.from_url(stub.url, token="t"), clock=clock, qps=1, burst=1,
                      timeout=5.0)
    holder = Holder()
    fenced = FencedClient(rest, holder)
    try:
        fenced.create(CONFIGMAPS, cm("first"), "ns")  # takes the only token
        outcome: list[BaseException | None] = []

        def second() -> None:
            try:
                fenced.create(CONFIGMAPS, cm("second"), "ns")
                outcome.append(None)
            except BaseException as err:
                outcome.append(err)

        t = threading.Thread(target=second, name="second-create")
        t.start()
        clock.wait_for_waiters(1)  # parked in the limiter, past FencedClient's first check
        holder.valid = False  # the lease expires while it waits
        clock.step(2.0)
        t.join(10)
        assert not t.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], NotLeader)
        assert [r.body and r.json()["metadata"]["name"] for r in stub.requests] == ["first"]
    finally:
        rest.close()


def test_reads_ignore_the_guard_and_writes_without_a_guard_pass(stub: StubServer) -> None:
    rest = RESTClient(KubeConfig.from_url(stub.url, token="t"), clock=FakeClock(), qps=0,
                      timeout=5.0)

    def refuse() -> None:
        raise NotLeader("no")

    try:
        with guarded(refuse):
            rest.get(CONFIGMAPS, "a", "ns")  # a read: sent
            with pytest.raises(NotLeader):
                rest.create(CONFIGMAPS, cm("b"), "ns")
        rest.create(CONFIGMAPS, cm("c"), "ns")  # guard removed on exit
        assert [r.method for r in stub.requests] == ["GET", "POST"]
    finally:
        rest.close()


def test_guards_nest_and_unwind() -> None:
    calls: list[str] = []
    with guarded(lambda: calls.append("outer")):
        with guarded(lambda: calls.append("inner")):
            check_write()
        check_write()
    check_write()
    assert calls == ["inner", "outer"]
