"""WebhookServer over real HTTPS on 127.0.0.1: routing, review handling, errors, lifecycle."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import re
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

import pytest

from pyctrl.webhook import (
    CertificateError,
    CertificatePaths,
    WebhookServer,
    WebhookServerOptions,
    allowed,
)
from tests.threads import running
from tests.unit.webhook.helpers import HANDLERS, Start, request, review


def post(server: WebhookServer, certs: CertificatePaths, path: str,
         body: bytes) -> tuple[int, bytes]:
    return request(server.port, certs.ca_file, "POST", path, body)


def test_denial_carries_status_and_uid(start: Start, certs: CertificatePaths) -> None:
    server = start(certs.ca_file.parent)
    status, body = post(server, certs, "/deny", json.dumps(review("abc")).encode())
    assert status == 200
    assert json.loads(body) == {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": {"uid": "abc", "allowed": False, "status": {
            "status": "Failure", "code": 422, "reason": "Invalid", "message": "no to CREATE"}}}


def test_patch_is_base64_json_patch(start: Start, certs: CertificatePaths) -> None:
    server = start(certs.ca_file.parent)
    status, body = post(server, certs, "/patch?timeout=5s", json.dumps(review()).encode())
    assert status == 200
    resp = json.loads(body)["response"]
    assert resp["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(resp["patch"])) == [
        {"op": "add", "path": "/spec/x", "value": 1}]


def test_reviews_reuse_one_tls_connection(start: Start, certs: CertificatePaths) -> None:
    # As the API server's Go client does: one handshake, then reviews on the kept connection.
    server = start(certs.ca_file.parent)
    context = ssl.create_default_context(cafile=str(certs.ca_file))
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)
    try:
        for uid in ("a", "b", "c"):
            conn.request("POST", "/allow", body=json.dumps(review(uid)).encode(),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            assert resp.status == 200 and resp.getheader("Connection") is None
            assert json.loads(resp.read())["response"] == {"uid": uid, "allowed": True}
            if uid == "a":
                first = conn.sock
            assert conn.sock is first
        assert server.active_connections() == 1
    finally:
        conn.close()


@pytest.mark.parametrize(("method", "path", "body", "code"), [
    ("GET", "/healthz", None, 200),
    ("GET", "/readyz", None, 200),
    ("GET", "/nope", None, 404),
    ("POST", "/nope", b"{}", 404),
    ("PUT", "/allow", b"{}", 405),
    ("POST", "/allow", b"not json", 400),
    ("POST", "/allow", b"[]", 400),
    ("POST", "/allow", b'{"kind": "Pod"}', 400),
    ("POST", "/boom", json.dumps(review()).encode(), 500),
    ("POST", "/allow", b" " * (65 * 1024), 413),
])
def test_errors(start: Start, certs: CertificatePaths, method: str, path: str,
                body: bytes | None, code: int) -> None:
    server = start(certs.ca_file.parent, max_body_bytes=64 * 1024)
    assert request(server.port, certs.ca_file, method, path, body)[0] == code


def test_oversized_headers_are_refused(start: Start, certs: CertificatePaths) -> None:
    server = start(certs.ca_file.parent, max_header_bytes=1024)
    context = ssl.create_default_context(cafile=str(certs.ca_file))
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)
    try:
        conn.request("POST", "/allow", body=b"{}", headers={"X-Big": "x" * 4096})
        assert conn.getresponse().status == 431
    finally:
        conn.close()


def test_survives_a_failed_handshake(start: Start, certs: CertificatePaths) -> None:
    server = start(certs.ca_file.parent)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        raw.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")  # plain HTTP to a TLS port
        with contextlib.suppress(ConnectionResetError):  # a reset is fine: it is not TLS
            assert b"ok" not in raw.recv(1024)
    assert request(server.port, certs.ca_file, "GET", "/healthz") == (200, b"ok")


def test_concurrent_requests(start: Start, certs: CertificatePaths) -> None:
    server = start(certs.ca_file.parent)
    body = json.dumps(review()).encode()
    results: list[int] = []
    lock = threading.Lock()

    def call() -> None:
        code, _ = post(server, certs, "/allow", body)
        with lock:
            results.append(code)

    threads = [threading.Thread(target=call, name=f"client-{i}") for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert results == [200] * 8


def test_run_serves_until_stop_and_joins(certs: CertificatePaths) -> None:
    server = WebhookServer(WebhookServerOptions(cert_dir=str(certs.ca_file.parent),
                                                host="127.0.0.1", port=0), HANDLERS)
    assert server.check() == "webhook server is not listening"
    with running(server.run, name="webhook-run"):
        assert server.ready.wait(timeout=10)
        assert server.check() is None
        assert request(server.port, certs.ca_file, "GET", "/healthz") == (200, b"ok")
    assert not server.ready.is_set()
    assert server.check() is not None
    server.shutdown()  # idempotent


def test_port_before_start_and_double_start(start: Start, certs: CertificatePaths) -> None:
    server = WebhookServer(WebhookServerOptions(cert_dir=str(certs.ca_file.parent),
                                                host="127.0.0.1", port=0))
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.port
    server = start(certs.ca_file.parent)
    with pytest.raises(RuntimeError, match="already started"):
        server.start()


def test_missing_cert_dir_fails_start_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "certs"
    server = WebhookServer(WebhookServerOptions(cert_dir=str(missing), host="127.0.0.1",
                                                port=0), HANDLERS)
    with pytest.raises(CertificateError, match=re.escape(str(missing))):
        server.start()
    assert server.check() is not None
    assert not any(t.name.startswith("webhook-") for t in threading.enumerate())


def test_register_rejects_bad_or_duplicate_paths(certs: CertificatePaths) -> None:
    server = WebhookServer(WebhookServerOptions(cert_dir=str(certs.ca_file.parent)), HANDLERS)
    for path in ("allow", "/healthz", "/allow"):
        with pytest.raises(ValueError):
            server.register(path, lambda request: allowed())


@pytest.mark.parametrize("kwargs", [
    {"port": 70000}, {"request_timeout_seconds": 0}, {"max_body_bytes": 0},
    {"max_connections": 0}, {"backlog": 0}, {"cert_poll_seconds": 0},
    {"shutdown_timeout_seconds": -1}, {"max_header_bytes": 0},
    {"header_timeout_seconds": 0}, {"max_connections_per_peer": 0}, {"workers": 0},
    {"idle_timeout_seconds": -1}, {"max_requests_per_connection": 0},
])
def test_config_is_validated(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        WebhookServerOptions(cert_dir="d", **kwargs)


def test_config_defaults() -> None:
    config = WebhookServerOptions(cert_dir="/certs")
    assert (config.cert_file, config.key_file) == (Path("/certs/tls.crt"),
                                                   Path("/certs/tls.key"))
    assert config.request_timeout_seconds == 10.0
    assert config.header_timeout_seconds == 5.0
    assert config.max_connections == 4096
    assert config.max_connections_per_peer == 512
    assert config.backlog == 1024
    assert config.max_body_bytes == 7 * 1024 * 1024
    assert config.idle_timeout_seconds == 120.0
    assert config.max_requests_per_connection == 1000


@pytest.mark.parametrize(("head", "code"), [
    (b"GARBAGE\r\n\r\n", 400),
    (b"POST /allow HTTP/1.1\r\nNo colon here\r\n\r\n", 400),
    (b"POST /allow HTTP/1.1\r\nHost: x\r\n\r\n", 411),
    (b"POST /allow HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411),
    (b"POST /allow HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
])
def test_malformed_request_heads(start: Start, certs: CertificatePaths, head: bytes,
                                 code: int) -> None:
    server = start(certs.ca_file.parent)
    context = ssl.create_default_context(cafile=str(certs.ca_file))
    with context.wrap_socket(socket.create_connection(("127.0.0.1", server.port), timeout=10),
                             server_hostname="127.0.0.1") as tls:
        tls.sendall(head)
        answer = b""
        while chunk := tls.recv(4096):
            answer += chunk
    assert answer.startswith(f"HTTP/1.1 {code} ".encode()), answer
    assert b"Connection: close" in answer
