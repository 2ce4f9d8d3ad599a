"""At a connection cap the front end makes room by cutting off the connections whose request
head has been incomplete longest (idle kept ones first), so a client that sends a whole
request promptly is served whatever idle or slow sockets the same address holds; real
servers on 127.0.0.1."""

from __future__ import annotations

import functools
import socket
from typing import Any

import pytest

from pyctrl.webhook import CertificatePaths
from tests.unit.frontend.helpers import client, get
from tests.unit.webhook.helpers import closed as _closed
from tests.waiting import eventually

SLOW_HEAD = b"POST /echo HTTP/1.1\r\nHost: h\r\nContent-Le"


def _hold(server: Any, n: int, *, source: str = "127.0.0.1", send: bytes = b"",
          tls: bool = False) -> list[socket.socket]:
    held = []
    for _ in range(n):
        sock = socket.create_connection(server.address, timeout=10,
                                        source_address=(source, 0))
        if send:
            sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00" if tls else send)
        held.append(sock)
    return held


@pytest.mark.parametrize("tls", [False, True])
def test_valid_requests_are_served_whatever_the_same_address_holds(
        serve: Any, certs: CertificatePaths, tls: bool) -> None:
    # Twice the per-address cap in silent and slow sockets from the valid client's address,
    # and a global cap below their number: every valid request still passes.
    server = serve(tls=tls, max_connections_per_peer=20, max_connections=30,
                   header_timeout_seconds=30.0, request_timeout_seconds=60.0)
    held = _hold(server, 20) + _hold(server, 20, send=SLOW_HEAD, tls=tls)
    held += _hold(server, 20, source="127.0.0.2")
    try:
        eventually(lambda: server.accepted == 60, what="every attacking socket accepted")
        ca = certs.ca_file if tls else None
        answers = [get(server, f"/echo?{i}", method="POST", body=b"x", ca_file=ca)
                   for i in range(25)]
        assert answers == [(200, f"POST /echo?{i} b'x'".encode()) for i in range(25)]
        assert server.refused == 0 and server.evicted >= 30
    finally:
        for sock in held:
            sock.close()


def test_a_request_with_a_complete_head_is_never_taken(serve: Any) -> None:
    server = serve(max_connections_per_peer=4, header_timeout_seconds=30.0,
                   request_timeout_seconds=60.0)
    in_body = socket.create_connection(server.address, timeout=10)
    in_body.sendall(b"POST /echo HTTP/1.1\r\nContent-Length: 4\r\n\r\nab")
    eventually(lambda: not server._slots.head_count(), what="its head read")
    held = []
    try:
        for n in range(10):  # the oldest without a complete head make room for the newest
            held += _hold(server, 1)
            eventually(functools.partial(_accepted, server, n + 2), what="accepted in order")
        assert server.evicted == 7
        assert [_closed(c, 2.0) for c in held[:7]] == [True] * 7
        assert [_closed(c, 0.05) for c in held[7:]] == [False] * 3
        in_body.sendall(b"cd")
        assert in_body.recv(1000).endswith(b"POST /echo? b'abcd'")
    finally:
        for sock in [in_body, *held]:
            sock.close()


def test_slow_heads_go_before_idle_kept_connections(serve: Any) -> None:
    # A kept connection closed under the client races with its next request, which is not
    # resent when it is a POST: the attacker's incomplete heads go first.
    server = serve(max_connections_per_peer=3, header_timeout_seconds=30.0)
    slow = _hold(server, 1, send=SLOW_HEAD)
    kept = client(server)
    kept.request("GET", "/ok")
    assert kept.getresponse().read() == b"ok"
    eventually(lambda: server.idle_connections() == 1, what="kept idle")
    late: list[socket.socket] = []
    try:
        for n in range(3):  # at the cap: each takes the oldest incomplete head
            late += _hold(server, 1)
            eventually(functools.partial(_accepted, server, n + 3), what="accepted in order")
        assert server.evicted == 2 and server.idle_closed == 0
        assert _closed(slow[0], 2.0) and _closed(late[0], 2.0)
        kept.request("POST", "/echo", body=b"still")
        assert kept.getresponse().read() == b"POST /echo? b'still'"
        eventually(lambda: server.idle_connections() == 1, what="kept idle again")
        late[1].sendall(b"GET /ok HTTP/1.1\r\n\r\n")  # its head done, late[2] is the last
        eventually(lambda: server.idle_connections() == 2, what="late[1] kept")
        late += _hold(server, 1)
        eventually(lambda: server.evicted == 3, what="the last incomplete head taken")
        late[3].sendall(b"GET /ok HTTP/1.1\r\n\r\n")
        eventually(lambda: server.idle_connections() == 3, what="all three kept idle")
        late += _hold(server, 1)  # no incomplete head left: the longest idle goes
        eventually(lambda: server.idle_closed == 1, what="an idle kept one closed")
        assert server.evicted == 3
        assert [_closed(c, 0.05) for c in (late[1], late[3], late[4])] == [False] * 3
    finally:
        kept.close()
        for sock in slow + late:
            sock.close()


def test_a_slow_tls_handshake_is_a_head_not_yet_read(serve: Any, certs: CertificatePaths
                                                     ) -> None:
    server = serve(tls=True, max_connections_per_peer=2, header_timeout_seconds=30.0)
    hello = _hold(server, 2, send=b"x", tls=True)
    try:
        eventually(lambda: server.accepted == 2, what="2 in their handshake")
        assert get(server, "/ok", ca_file=certs.ca_file) == (200, b"ok")
        assert server.evicted == 1
    finally:
        for sock in hello:
            sock.close()


def _accepted(server: Any, n: int) -> bool:
    return bool(server.accepted == n)
