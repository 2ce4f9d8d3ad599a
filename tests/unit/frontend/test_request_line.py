"""The request line's version and method (issue 43 item 3): HTTP/1.0 and HTTP/1.1 only (505
for any other well-formed version, 400 for a malformed one), a method the server knows (501
for a well-formed token it does not, 400 for one that is not a token); on the wire too. And
a handler bug every request meets is logged once, not per request."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from structlog.testing import capture_logs

from pyctrl.frontend.http import RequestHead, parse_head
from tests.unit.frontend.helpers import ask, get


@pytest.mark.parametrize("version", ["HTTP/1.9", "HTTP/1.2", "HTTP/2.0", "HTTP/0.9",
                                     "HTTP/3.0", "HTTP/9.9"])
def test_a_version_other_than_1_0_and_1_1_is_505(version: str) -> None:
    reply = parse_head(f"GET /ok {version}\r\nHost: a".encode())
    assert not isinstance(reply, RequestHead), version
    assert reply[0] == 505


@pytest.mark.parametrize("version", ["HTTP/1", "HTTP/1.10", "HTTP/11", "http/1.1",
                                     "HTTP/1.1 ", "HTTPS/1.1", "HTTP/1.x", "HTTP/\u0661.\u0661"])
def test_a_malformed_version_is_400(version: str) -> None:
    reply = parse_head(f"GET /ok {version}".encode())
    assert not isinstance(reply, RequestHead), version
    assert reply[0] == 400


@pytest.mark.parametrize("version", ["HTTP/1.0", "HTTP/1.1"])
def test_1_0_and_1_1_are_read_as_themselves(version: str) -> None:
    head = parse_head(f"GET /ok {version}".encode())
    assert isinstance(head, RequestHead) and head.version == version


@pytest.mark.parametrize("method", ["GE65535T", "get", "Post", "FOO", "PROPFIND", "BREW",
                                    "G-T", "~"])
def test_a_well_formed_but_unknown_method_is_501(method: str) -> None:
    reply = parse_head(f"{method} /ok HTTP/1.1".encode())
    assert not isinstance(reply, RequestHead), method
    assert reply[0] == 501


@pytest.mark.parametrize("method", ["G(T", "GE T", "G\x00T", "GÉT", "G\"T", "G;T"])
def test_a_method_that_is_not_a_token_is_400(method: str) -> None:
    reply = parse_head(f"{method} /ok HTTP/1.1".encode("latin-1"))
    assert not isinstance(reply, RequestHead), method
    assert reply[0] == 400


# RFC 9110 section 9.3, and PATCH (RFC 5789).
@pytest.mark.parametrize("method", ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT",
                                    "OPTIONS", "TRACE", "PATCH"])
def test_every_known_method_parses(method: str) -> None:
    head = parse_head(f"{method} /ok HTTP/1.1".encode())
    assert isinstance(head, RequestHead) and head.method == method


def test_a_malformed_head_is_400_before_an_unknown_version_or_method() -> None:
    reply = parse_head(b"FOO /ok HTTP/2.0\r\nContent-Length : 3")
    assert not isinstance(reply, RequestHead) and reply[0] == 400
    reply = parse_head(b"FOO /ok HTTP/2.0")
    assert not isinstance(reply, RequestHead) and reply[0] == 505


@pytest.mark.parametrize(("line", "status"), [
    (b"GET /ok HTTP/1.9", b"505"), (b"GE65535T /ok HTTP/1.1", b"501"),
    (b"GET /ok HTTP/1.10", b"400"), (b"G(T /ok HTTP/1.1", b"400"),
])
def test_the_server_answers_and_never_reaches_a_handler(serve: Any, line: bytes,
                                                        status: bytes) -> None:
    server = serve()
    with socket.create_connection(server.address, timeout=5) as sock:
        reader = sock.makefile("rb")
        answer, _ = ask(sock, reader, line + b"\r\nHost: a\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 " + status + b" "), answer
    assert b"Connection: close" in answer


def test_a_handler_bug_every_request_meets_is_logged_once(serve: Any) -> None:
    server = serve()
    with capture_logs() as lines:
        for _ in range(20):
            assert get(server, "/boom")[0] == 500
    failed = [line for line in lines if line["event"] == "request handler failed"]
    assert len(failed) <= 2 and "exc_info" in failed[0], failed
