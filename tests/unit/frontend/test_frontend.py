"""pyctrl.frontend over real sockets on 127.0.0.1: idle and slow connections cost no thread,
the header deadline is separate from the request's, per-client caps, routes and handlers
(keep-alive: test_keepalive.py)."""

from __future__ import annotations

import functools
import resource
import socket
import ssl
import threading
import time
from typing import Any

import pytest

from pyctrl.frontend import FrontendOptions
from pyctrl.webhook import CertificatePaths
from tests.unit.frontend.helpers import GATE, get
from tests.unit.webhook.helpers import closed as _closed
from tests.waiting import eventually


def test_routes_handlers_and_errors_over_plain_http(serve: Any) -> None:
    server = serve()
    assert get(server, "/ok") == (200, b"ok")
    assert get(server, "/echo?a=1", method="POST", body=b"xyz") == (200, b"POST /echo?a=1 b'xyz'")
    assert get(server, "/boom")[0] == 500
    assert get(server, "/nope")[0] == 404


def test_routes_and_handlers_over_tls(serve: Any, certs: CertificatePaths) -> None:
    server = serve(tls=True)
    assert get(server, "/echo", method="POST", body=b"{}", ca_file=certs.ca_file) == (
        200, b"POST /echo? b'{}'")


@pytest.mark.parametrize("tls", [False, True])
@pytest.mark.parametrize("chunk", [1, 3, 40])
def test_a_request_split_anywhere_is_read_whole(serve: Any, certs: CertificatePaths,
                                                tls: bool, chunk: int) -> None:
    server = serve(tls=tls)
    raw = socket.create_connection(server.address, timeout=10)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock: socket.socket = raw
    if tls:
        context = ssl.create_default_context(cafile=str(certs.ca_file))
        sock = context.wrap_socket(raw, server_hostname="127.0.0.1")
    request = (b"POST /echo?x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nConnection: close\r\n"
               b"\r\nhello")
    with sock:
        for i in range(0, len(request), chunk):  # one TCP segment (or TLS record) each
            sock.sendall(request[i:i + chunk])
        answer = b""
        while part := sock.recv(4096):
            answer += part
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.endswith(b"POST /echo?x b'hello'")


def test_idle_connections_cost_no_thread_and_requests_still_pass(
        serve: Any, certs: CertificatePaths) -> None:
    server = serve(tls=True)
    before = threading.active_count()
    idle = [socket.create_connection(server.address, timeout=5) for _ in range(300)]
    try:
        eventually(lambda: server.active_connections() == 300, what="300 idle held")
        assert threading.active_count() == before
        for _ in range(5):
            assert get(server, "/ok", ca_file=certs.ca_file) == (200, b"ok")
        assert server.refused == 0
    finally:
        for sock in idle:
            sock.close()
    eventually(lambda: server.active_connections() == 0, what="idle closed")


def test_header_deadline_cuts_a_slow_head_before_the_request_deadline(serve: Any) -> None:
    server = serve(header_timeout_seconds=0.3, request_timeout_seconds=60.0)
    with socket.create_connection(server.address, timeout=5) as sock:
        sock.sendall(b"GET /ok HTTP/1.1\r\n")  # never ends the head
        assert _closed(sock, 10.0)  # well before the 60 s request deadline
    eventually(lambda: server.deadlines == 1, what="one deadline counted")


def test_a_slow_body_after_a_prompt_head_gets_the_request_deadline(serve: Any) -> None:
    server = serve(header_timeout_seconds=0.2, request_timeout_seconds=60.0)
    with socket.create_connection(server.address, timeout=10) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\n")
        for byte in (b"a", b"b", b"c"):
            # Past the header deadline between bytes: only the head had to be prompt.
            assert not _closed(sock, 0.3)
            sock.sendall(byte)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.endswith(b"POST /echo? b'abc'")


def test_per_peer_cap_takes_the_oldest_silent_connections_of_that_client(serve: Any) -> None:
    server = serve(max_connections_per_peer=3, header_timeout_seconds=30.0)
    held = []
    for n in range(1, 6):
        held.append(socket.create_connection(server.address, timeout=5,
                                              source_address=("127.0.0.2", 0)))
        eventually(functools.partial(_accepted, server, n), what="accepted in order")
    try:
        eventually(lambda: server.evicted == 2 and server.active_connections() == 3,
                   what="3 held, 2 evicted")
        assert server.refused == 0
        assert [_closed(c, 2.0) for c in held[:2]] == [True, True]
        assert [_closed(c, 0.05) for c in held[2:]] == [False] * 3
        assert get(server, "/ok", source="127.0.0.1") == (200, b"ok")
        assert server.evicted == 2  # another client's connection took no slot of 127.0.0.2
    finally:
        for sock in held:
            sock.close()


def test_global_cap_refuses_only_when_every_connection_has_a_complete_request(
        serve: Any) -> None:
    server = serve(max_connections=2, header_timeout_seconds=30.0)
    held = [socket.create_connection(server.address, timeout=5, source_address=(f"127.0.0.{i}", 0))
            for i in range(2, 4)]
    try:
        for sock in held:  # both busy in a handler: nothing to take
            sock.sendall(b"GET /gate HTTP/1.1\r\n\r\n")
        eventually(lambda: server.active_connections() == 2 and not server._slots.head_count(),
                   what="2 heads read")
        late = socket.create_connection(server.address, timeout=5,
                                        source_address=("127.0.0.9", 0))
        eventually(lambda: server.refused == 1, what="1 refused")
        assert _closed(late, 2.0)
        late.close()
        GATE.set()
        assert [c.recv(100).startswith(b"HTTP/1.1 200") for c in held] == [True, True]
    finally:
        for sock in held:
            sock.close()


def test_shutdown_closes_a_fresh_client_at_once_and_is_bounded_with_a_handler_stuck(
        serve: Any) -> None:
    server = serve(shutdown_timeout_seconds=0.5, header_timeout_seconds=60.0)
    idle = socket.create_connection(server.address, timeout=5)
    stuck = socket.create_connection(server.address, timeout=5)
    stuck.sendall(b"GET /gate HTTP/1.1\r\n\r\n")
    try:
        eventually(lambda: server.active_connections() == 2, what="both held")
        begin = time.monotonic()
        server.shutdown()
        assert time.monotonic() - begin < 5.0
        assert _closed(idle, 2.0) and _closed(stuck, 2.0)
    finally:
        GATE.set()  # the stuck worker ends; the fixture's second shutdown is a no-op
        idle.close()
        stuck.close()
    eventually(lambda: not any(t.name.startswith("test-") for t in threading.enumerate()),
               what="worker threads ended")


def test_start_raises_a_low_open_file_limit_to_cover_the_cap(serve: Any) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 3000:
        pytest.skip(f"the hard open-file limit ({hard}) is too low to show it")
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    try:
        serve(max_connections=2000)
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 2000 + 256
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_config_is_validated() -> None:
    for bad in ({"port": -1}, {"header_timeout_seconds": 0}, {"workers": 0},
                {"max_connections_per_peer": 0}, {"idle_timeout_seconds": -1},
                {"max_requests_per_connection": 0}):
        with pytest.raises(ValueError):
            FrontendOptions(**bad)  # type: ignore[arg-type]


def _accepted(server: Any, n: int) -> bool:
    return bool(server.accepted == n)
