"""RESTClient against a scripted local HTTP server: URLs, bodies, errors, retries, watches."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pyctrl.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    MethodNotAllowed,
    NotFound,
    ServerError,
    ServerTimeout,
    Timeout,
    TooManyRequests,
    Unauthorized,
)
from pyctrl.kube.client import RESTClient
from pyctrl.kube.config import KubeConfig
from pyctrl.kube.interface import WatchEvent
from pyctrl.kube.resource import CONFIGMAPS, JOBS, NAMESPACES, Resource
from pyctrl.testing.fake_clock import FakeClock
from tests.unit.kube.http_stub import Reply, Request, StubServer
from tests.unit.kube.threads import run_in_thread

CRONJOBS = Resource("batch.pyctrl.io", "v1", "cronjobs", "CronJob")


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer()
    yield server
    server.stop()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["lean", "urllib3"])
def client(stub: StubServer, clock: FakeClock, request: pytest.FixtureRequest
           ) -> Iterator[RESTClient]:
    """A client on either transport: one request/retry loop serves both, so every behaviour
    below holds for each."""
    c = RESTClient(KubeConfig.from_url(stub.url, token="s3cret"), clock=clock, qps=0,
                   timeout=5.0, transport=request.param)
    yield c
    c.close()


def status(code: int, reason: str, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                            "code": code, "reason": reason, "message": f"{reason} happened"}
    if details:
        body["details"] = details
    return body


# -- URLs and requests ---------------------------------------------------------------------
def test_url_building(client: RESTClient, stub: StubServer) -> None:
    base = stub.url
    assert client.url(CONFIGMAPS, "ns", "a") == f"{base}/api/v1/namespaces/ns/configmaps/a"
    assert client.url(CONFIGMAPS) == f"{base}/api/v1/configmaps"
    assert client.url(NAMESPACES, "ignored", "x") == f"{base}/api/v1/namespaces/x"
    assert client.url(JOBS, "d", "j", "status") == (
        f"{base}/apis/batch/v1/namespaces/d/jobs/j/status")
    assert client.url(CRONJOBS, "d", "a/b", query={"labelSelector": "a in (x,y)"}) == (
        f"{base}/apis/batch.pyctrl.io/v1/namespaces/d/cronjobs/a%2Fb"
        "?labelSelector=a+in+%28x%2Cy%29")


def test_get_sends_auth_and_user_agent(client: RESTClient, stub: StubServer) -> None:
    stub.respond = lambda req: Reply(body={"kind": "ConfigMap", "metadata": {"name": "a"}})
    assert client.get(CONFIGMAPS, "a", "ns")["metadata"]["name"] == "a"
    req = stub.requests[0]
    assert (req.method, req.path) == ("GET", "/api/v1/namespaces/ns/configmaps/a")
    assert req.headers["authorization"] == "Bearer s3cret"
    assert req.headers["user-agent"] == "pyctrl"
    assert req.headers["accept"] == "application/json"


def test_namespaced_get_without_namespace_is_an_error(client: RESTClient) -> None:
    with pytest.raises(ValueError, match="namespace"):
        client.get(CONFIGMAPS, "a")


def test_list_query_parameters(client: RESTClient, stub: StubServer) -> None:
    stub.respond = lambda req: Reply(body={"items": [], "metadata": {"resourceVersion": "5"}})
    client.list(JOBS, label_selector="a=b", field_selector="metadata.name=x", limit=500,
                continue_="tok", resource_version="0", resource_version_match="NotOlderThan")
    req = stub.requests[0]
    assert req.path == "/apis/batch/v1/jobs"
    assert req.query == {"labelSelector": "a=b", "fieldSelector": "metadata.name=x",
                         "limit": "500", "continue": "tok", "resourceVersion": "0",
                         "resourceVersionMatch": "NotOlderThan"}


def test_create_update_status_fill_type_and_use_object_namespace(
        client: RESTClient, stub: StubServer) -> None:
    stub.respond = lambda req: Reply(body=req.json())
    obj = {"metadata": {"name": "j", "namespace": "d"}, "spec": {}}
    assert client.create(JOBS, obj)["kind"] == "Job"
    client.update(JOBS, obj)
    client.update_status(JOBS, obj)
    assert [(r.method, r.path) for r in stub.requests] == [
        ("POST", "/apis/batch/v1/namespaces/d/jobs"),
        ("PUT", "/apis/batch/v1/namespaces/d/jobs/j"),
        ("PUT", "/apis/batch/v1/namespaces/d/jobs/j/status")]
    assert stub.requests[0].json()["apiVersion"] == "batch/v1"
    assert stub.requests[0].headers["content-type"] == "application/json"
    assert "apiVersion" not in obj


@pytest.mark.parametrize(("patch_type", "content_type"), [
    ("merge", "application/merge-patch+json"),
    ("json", "application/json-patch+json"),
    ("strategic", "application/strategic-merge-patch+json"),
])
def test_patch_content_types(client: RESTClient, stub: StubServer, patch_type: Any,
                             content_type: str) -> None:
    stub.respond = lambda req: Reply(body={"kind": "ConfigMap"})
    body: Any = [{"op": "add", "path": "/x", "value": 1}] if patch_type == "json" else {"x": 1}
    client.patch(CONFIGMAPS, "a", body, "ns", patch_type=patch_type, subresource="status")
    req = stub.requests[0]
    assert req.method == "PATCH" and req.path.endswith("/configmaps/a/status")
    assert req.headers["content-type"] == content_type and req.json() == body


def test_patch_answered_with_metadata_only(client: RESTClient, stub: StubServer) -> None:
    stub.respond = lambda req: Reply(body={"apiVersion": "v1", "kind": "ConfigMap", "data": {
        "x": "1"}, "metadata": {"name": "a", "resourceVersion": "7", "managedFields": [{}]}})
    got = client.patch(CONFIGMAPS, "a", {"data": {"x": "1"}}, "ns", answer="metadata")
    assert got == {"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "a", "resourceVersion": "7"}}
    assert client.patch(CONFIGMAPS, "a", {}, "ns")["data"] == {"x": "1"}  # the default: whole
    stub.respond = lambda req: Reply(body=[1])
    with pytest.raises(ApiError, match="undecodable"):
        client.patch(CONFIGMAPS, "a", {}, "ns", answer="metadata")


def test_server_side_apply(client: RESTClient, stub: StubServer) -> None:
    stub.respond = lambda req: Reply(body=req.json())
    client.patch(CONFIGMAPS, "a", {"metadata": {"name": "a"}}, "ns", patch_type="apply",
                 field_manager="ctrl", force=True)
    req = stub.requests[0]
    assert req.headers["content-type"] == "application/apply-patch+yaml"
    assert req.query == {"fieldManager": "ctrl", "force": "true"}
    assert req.json()["kind"] == "ConfigMap"
    with pytest.raises(ValueError):
        client.patch(CONFIGMAPS, "a", {}, "ns", patch_type="apply")
    with pytest.raises(ValueError):
        client.patch(CONFIGMAPS, "a", {}, "ns", force=True)


def test_delete_sends_delete_options(client: RESTClient, stub: StubServer) -> None:
    replies = iter([Reply(body={"kind": "ConfigMap", "metadata": {"name": "a"}}),
                    Reply(body={"kind": "Status", "status": "Success"})])
    stub.respond = lambda req: next(replies)
    gone = client.delete(CONFIGMAPS, "a", "ns", propagation_policy="Foreground",
                         preconditions={"uid": "u1", "resourceVersion": "7"})
    assert gone == {"kind": "ConfigMap", "metadata": {"name": "a"}}
    assert stub.requests[0].json() == {
        "apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground",
        "preconditions": {"uid": "u1", "resourceVersion": "7"}}
    assert client.delete(CONFIGMAPS, "b", "ns") is None


# -- errors --------------------------------------------------------------------------------
@pytest.mark.parametrize(("code", "reason", "kind"), [
    (400, "BadRequest", BadRequest),
    (401, "Unauthorized", Unauthorized),
    (403, "Forbidden", Forbidden),
    (404, "NotFound", NotFound),
    (405, "MethodNotAllowed", MethodNotAllowed),
    (409, "AlreadyExists", AlreadyExists),
    (409, "Conflict", Conflict),
    (410, "Expired", Gone),
    (410, "Gone", Gone),
    (422, "Invalid", Invalid),
    (500, "InternalError", ServerError),
    (503, "ServiceUnavailable", ServerError),
    (504, "Timeout", ServerTimeout),
])
def test_error_mapping(client: RESTClient, stub: StubServer, code: int, reason: str,
                       kind: type[ApiError]) -> None:
    stub.respond = lambda req: Reply(code, status(code, reason, name="a", kind="configmaps"))
    with pytest.raises(kind) as err:
        client.get(CONFIGMAPS, "a", "ns")
    assert type(err.value) is kind
    assert (err.value.code, err.value.reason) == (code, reason)
    assert err.value.message == f"{reason} happened"


def test_invalid_carries_causes(client: RESTClient, stub: StubServer) -> None:
    cause = {"field": "spec.schedule", "reason": "FieldValueInvalid", "message": "bad cron"}
    stub.respond = lambda req: Reply(422, status(422, "Invalid", causes=[cause]))
    with pytest.raises(Invalid) as err:
        client.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "n"}})
    assert [(c.field, c.message) for c in err.value.causes] == [("spec.schedule", "bad cron")]


def test_non_status_error_body(client: RESTClient, stub: StubServer) -> None:
    stub.respond = lambda req: Reply(502, b"<html>bad gateway</html>")
    with pytest.raises(ServerError) as err:
        client.get(CONFIGMAPS, "a", "ns")
    assert err.value.code == 502


def test_read_timeout_raises_timeout(stub: StubServer, clock: FakeClock) -> None:
    release = threading.Event()

    def hang(req: Request) -> Reply:
        release.wait(10)
        return Reply(body={})

    stub.respond = hang
    c = RESTClient(KubeConfig.from_url(stub.url), clock=clock, qps=0, timeout=0.2)
    try:
        with pytest.raises(Timeout):
            c.get(CONFIGMAPS, "a", "ns")
    finally:
        release.set()
        c.close()


def test_connection_refused_is_connection_error(stub: StubServer) -> None:
    url = stub.url
    stub.stop()
    c = RESTClient(KubeConfig.from_url(url), qps=0, timeout=2.0)
    try:
        with pytest.raises(ApiError) as err:
            c.get(CONFIGMAPS, "a", "ns")
    finally:
        c.close()
    assert err.value.reason == "ConnectionError" and not isinstance(err.value, Timeout)


# -- 429 -----------------------------------------------------------------------------------
def test_429_waits_retry_after_on_the_clock_then_succeeds(
        client: RESTClient, stub: StubServer, clock: FakeClock) -> None:
    replies = iter([Reply(429, status(429, "TooManyRequests"), {"Retry-After": "3"}),
                    Reply(429, status(429, "TooManyRequests", retryAfterSeconds=2)),
                    Reply(body={"kind": "ConfigMap"})])
    stub.respond = lambda req: next(replies)
    t, out = run_in_thread(lambda: client.create(CONFIGMAPS, {"metadata": {
        "name": "a", "namespace": "n"}}))
    try:
        assert clock.wait_for_waiters(1)
        assert len(stub.requests) == 1
        clock.step(2.9)
        assert len(stub.requests) == 1
        clock.step(0.1)
        assert stub.wait_requests(2)
        assert clock.wait_for_waiters(1)  # now waiting 2 s from details.retryAfterSeconds
        clock.step(2)
    finally:
        t.join(5.0)
    assert out == {"value": {"kind": "ConfigMap"}}
    assert [r.method for r in stub.requests] == ["POST"] * 3


def test_429_gives_up_after_max_retries(stub: StubServer, clock: FakeClock) -> None:
    stub.respond = lambda req: Reply(429, status(429, "TooManyRequests"), {"Retry-After": "1"})
    c = RESTClient(KubeConfig.from_url(stub.url), clock=clock, qps=0, max_retries=2)
    t, out = run_in_thread(lambda: c.get(CONFIGMAPS, "a", "ns"))
    try:
        for n in (1, 2):
            assert stub.wait_requests(n)
            assert clock.wait_for_waiters(1)
            clock.step(1)
    finally:
        t.join(5.0)
        c.close()
    assert isinstance(out["error"], TooManyRequests) and out["error"].retry_after == 1.0
    assert len(stub.requests) == 3


# -- rate limiting and metrics -------------------------------------------------------------
def test_client_side_rate_limit_uses_the_clock(stub: StubServer, clock: FakeClock) -> None:
    c = RESTClient(KubeConfig.from_url(stub.url), clock=clock, qps=1, burst=2)
    try:
        c.get(CONFIGMAPS, "a", "ns")
        c.get(CONFIGMAPS, "a", "ns")
        t, out = run_in_thread(lambda: c.get(CONFIGMAPS, "a", "ns"))
        assert clock.wait_for_waiters(1)
        assert len(stub.requests) == 2
        clock.step(1)
        t.join(5.0)
    finally:
        c.close()
    assert "value" in out and len(stub.requests) == 3


def test_metrics(stub: StubServer, clock: FakeClock) -> None:
    registry = CollectorRegistry()
    replies = iter([Reply(body={}), Reply(404, status(404, "NotFound"))])
    stub.respond = lambda req: next(replies)
    c = RESTClient(KubeConfig.from_url(stub.url), clock=clock, qps=0, registry=registry)
    c2 = RESTClient(KubeConfig.from_url(stub.url), clock=clock, qps=0, registry=registry)
    try:
        c.get(CONFIGMAPS, "a", "ns")
        with pytest.raises(NotFound):
            c2.get(CONFIGMAPS, "a", "ns")
    finally:
        c.close()
        c2.close()
    host = stub.url.removeprefix("http://")
    sample = registry.get_sample_value
    assert sample("rest_client_requests_total",
                  {"code": "200", "method": "GET", "host": host}) == 1.0
    assert sample("rest_client_requests_total",
                  {"code": "404", "method": "GET", "host": host}) == 1.0
    assert sample("rest_client_request_duration_seconds_count",
                  {"verb": "GET", "host": host}) == 2.0


# -- watch ---------------------------------------------------------------------------------
def ev(kind: str, name: str, rv: str) -> bytes:
    return (b'{"type":"%s","object":{"metadata":{"name":"%s","resourceVersion":"%s"}}}\n'
            % (kind.encode(), name.encode(), rv.encode()))


def test_watch_streams_events_split_across_chunks(client: RESTClient, stub: StubServer) -> None:
    a, b = ev("ADDED", "a", "1"), ev("MODIFIED", "a", "2")
    err = b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}\n'
    stub.respond = lambda req: Reply(chunks=[a[:10], a[10:] + b[:5], b[5:], err])
    events = list(client.watch(CONFIGMAPS, "ns", resource_version="1", timeout_seconds=30))
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "ERROR"]
    assert events[2]["object"]["code"] == 410
    req = stub.requests[0]
    assert req.query == {"watch": "true", "allowWatchBookmarks": "true",
                         "resourceVersion": "1", "timeoutSeconds": "30"}


def test_watch_close_from_another_thread_ends_iteration(
        client: RESTClient, stub: StubServer) -> None:
    hold = threading.Event()
    stub.respond = lambda req: Reply(chunks=[ev("ADDED", "a", "1"), hold])
    stream = client.watch(CONFIGMAPS, "ns")
    got: list[WatchEvent] = []
    first = threading.Event()

    def read() -> None:
        for event in stream:
            got.append(event)
            first.set()

    t = threading.Thread(target=read, name="watch-reader")
    t.start()
    try:
        assert first.wait(5.0)
        stream.close()
        t.join(5.0)
        assert not t.is_alive()
    finally:
        hold.set()
        t.join(5.0)
    assert [e["type"] for e in got] == ["ADDED"]


def test_watch_start_error_raises(client: RESTClient, stub: StubServer) -> None:
    stub.respond = lambda req: Reply(410, status(410, "Expired"))
    with pytest.raises(Gone):
        client.watch(CONFIGMAPS, "ns", resource_version="1")


def test_client_close_ends_open_watches(client: RESTClient, stub: StubServer) -> None:
    hold = threading.Event()
    stub.respond = lambda req: Reply(chunks=[hold])
    stream = client.watch(CONFIGMAPS)
    t, out = run_in_thread(lambda: list(stream))
    try:
        client.close()
        t.join(5.0)
        assert not t.is_alive()
    finally:
        hold.set()
        t.join(5.0)
    assert out == {"value": []}
    with pytest.raises(ApiError, match="closed"):
        client.get(CONFIGMAPS, "a", "ns")


def test_rest_client_satisfies_the_client_protocol(stub: StubServer) -> None:
    from pyctrl.kube.interface import Client

    c: Client = RESTClient(KubeConfig.from_url(stub.url), qps=0)  # mypy checks the protocol
    assert isinstance(c, RESTClient)
    c.close()
