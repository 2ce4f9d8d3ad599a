"""RESTClient.list_raw and ListWatch.list_pages (pipelined) against a scripted HTTP server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pyctrl.cache.listwatch import ListWatch
from pyctrl.errors import Forbidden, Gone
from pyctrl.kube.client import RESTClient
from pyctrl.kube.config import KubeConfig
from pyctrl.kube.resource import CONFIGMAPS
from pyctrl.testing.fake_clock import FakeClock
from tests.unit.kube.http_stub import Reply, Request, StubServer


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer()
    yield server
    server.stop()


@pytest.fixture
def client(stub: StubServer) -> Iterator[RESTClient]:
    c = RESTClient(KubeConfig.from_url(stub.url, token="t"), clock=FakeClock(), qps=0,
                   timeout=5.0)
    yield c
    c.close()


def page(names: list[str], cont: str = "") -> dict[str, Any]:
    md: dict[str, Any] = {"resourceVersion": "9"}
    if cont:
        md["continue"] = cont
    return {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": md,
            "items": [{"metadata": {"name": n, "namespace": "ns"}} for n in names]}


def status(code: int, reason: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": reason}


def test_list_raw_returns_the_body_and_raises_like_list(client: RESTClient,
                                                        stub: StubServer) -> None:
    stub.respond = lambda req: Reply(body=b'{"items":[],"metadata":{"resourceVersion":"3"}}')
    assert client.list_raw(CONFIGMAPS, "ns", limit=5, continue_="c") == (
        b'{"items":[],"metadata":{"resourceVersion":"3"}}')
    assert stub.requests[0].query == {"limit": "5", "continue": "c"}
    assert client.list(CONFIGMAPS, "ns")["metadata"]["resourceVersion"] == "3"
    stub.respond = lambda req: Reply(status=403, body=status(403, "Forbidden"))
    with pytest.raises(Forbidden):
        client.list_raw(CONFIGMAPS, "ns")


def test_list_pages_follows_continue_tokens_with_the_same_queries(client: RESTClient,
                                                                  stub: StubServer) -> None:
    replies = {None: page(["a", "b"], "c1"), "c1": page(["c"], "c2"), "c2": page(["d"])}
    stub.respond = lambda req: Reply(body=replies[req.query.get("continue")])
    lw = ListWatch(client, CONFIGMAPS, "ns", label_selector="x=y")
    pages = list(lw.list_pages(limit=2, resource_version="0"))
    assert [[o["metadata"]["name"] for o in p["items"]] for p in pages] == [
        ["a", "b"], ["c"], ["d"]]
    assert [r.query for r in stub.requests] == [
        {"labelSelector": "x=y", "limit": "2", "resourceVersion": "0"},
        {"labelSelector": "x=y", "limit": "2", "continue": "c1"},
        {"labelSelector": "x=y", "limit": "2", "continue": "c2"},
    ]


def test_list_pages_raises_410_on_a_continue_for_that_page(client: RESTClient,
                                                           stub: StubServer) -> None:
    def respond(req: Request) -> Reply:
        if req.query.get("continue"):
            return Reply(status=410, body=status(410, "Expired"))
        return Reply(body=page(["a"], "c1"))

    stub.respond = respond
    pages = ListWatch(client, CONFIGMAPS, "ns").list_pages(limit=1, resource_version="")
    assert next(pages)["items"][0]["metadata"]["name"] == "a"
    with pytest.raises(Gone):
        next(pages)
