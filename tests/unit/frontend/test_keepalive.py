"""Keep-alive in pyctrl.frontend over real sockets on 127.0.0.1: one connection serves
several requests, the client's Connection header decides (HTTP/1.1 and 1.0), pipelined
requests are answered in order, the idle timeout and a later request's header deadline run
on loop time the test moves (LoopClock), graceful shutdown closes idle connections at once,
and idle kept connections give their slots to new clients at the caps (after the silent ones)."""

from __future__ import annotations

import socket
import ssl
import threading
from typing import Any

import pytest

from pyctrl.frontend import Frontend
from pyctrl.webhook import CertificatePaths
from tests.unit.frontend.helpers import ENTERED, GATE, LoopClock, ask, client, get, read_answer
from tests.unit.webhook.helpers import closed as _closed
from tests.waiting import eventually

OK = b"GET /ok HTTP/1.1\r\nHost: h\r\n\r\n"


def connect(server: Frontend, *, tls_ca: CertificatePaths | None = None,
            source: str = "127.0.0.1") -> socket.socket:
    raw = socket.create_connection(server.address, timeout=10, source_address=(source, 0))
    if tls_ca is None:
        return raw
    context = ssl.create_default_context(cafile=str(tls_ca.ca_file))
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


@pytest.mark.parametrize("tls", [False, True])
def test_one_connection_serves_several_requests(serve: Any, certs: CertificatePaths,
                                                tls: bool) -> None:
    server = serve(tls=tls)
    conn = client(server, ca_file=certs.ca_file if tls else None)
    try:
        for i in range(3):
            conn.request("POST", f"/echo?i={i}", body=b"x" * i)
            resp = conn.getresponse()
            assert (resp.status, resp.read()) == (200, f"POST /echo?i={i} {b'x' * i!r}".encode())
            assert resp.getheader("Connection") is None  # HTTP/1.1: kept by default
            if i == 0:
                first = conn.sock
            assert conn.sock is first  # http.client reopens a connection the server closed
        eventually(lambda: server.idle_connections() == 1, what="one idle kept connection")
        assert server.active_connections() == 1
    finally:
        conn.close()
    eventually(lambda: server.active_connections() == 0, what="the client's close ends it")
    assert server.deadlines == 0


@pytest.mark.parametrize(("method", "version", "header", "kept"), [
    ("GET", "HTTP/1.1", "", True),
    ("GET", "HTTP/1.1", "Connection: close\r\n", False),
    ("GET", "HTTP/1.1", "Connection: TE, Close\r\n", False),
    ("GET", "HTTP/1.0", "", False),
    ("GET", "HTTP/1.0", "Connection: Keep-Alive\r\n", True),
    ("HEAD", "HTTP/1.1", "", False),  # its answer carries a body: never kept
])
def test_the_client_decides_whether_its_connection_is_kept(
        serve: Any, method: str, version: str, header: str, kept: bool) -> None:
    server = serve()
    with connect(server) as sock, sock.makefile("rb") as reader:
        head, body = ask(sock, reader, f"{method} /ok {version}\r\n{header}\r\n".encode())
        assert head.startswith(b"HTTP/1.1 200 OK\r\n") and body == b"ok"
        if not kept:
            assert b"\r\nConnection: close\r\n" in head
            assert reader.read() == b""  # the server closed
            return
        assert b"Connection: close" not in head
        assert (b"\r\nConnection: keep-alive\r\n" in head) == (version == "HTTP/1.0")
        head, body = ask(sock, reader, b"POST /echo HTTP/1.1\r\nContent-Length: 2\r\n"
                                       b"Connection: close\r\n\r\nhi")
        assert body == b"POST /echo? b'hi'" and b"\r\nConnection: close\r\n" in head
        assert reader.read() == b""


def test_keep_alive_off_and_the_cap_on_requests_per_connection(serve: Any) -> None:
    off = serve(idle_timeout_seconds=0)
    with connect(off) as sock, sock.makefile("rb") as reader:
        assert b"\r\nConnection: close\r\n" in ask(sock, reader, OK)[0]
    capped = serve(max_requests_per_connection=3)
    with connect(capped) as sock, sock.makefile("rb") as reader:
        heads = [ask(sock, reader, OK)[0] for _ in range(3)]
        assert [b"Connection: close" in h for h in heads] == [False, False, True]
        assert reader.read() == b""


PIPELINE = (b"POST /echo?1 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
            b"GET /ok HTTP/1.1\r\n\r\n"  # answered by the route, on the loop
            b"POST /ok HTTP/1.1\r\nContent-Length: 4\r\n\r\nzzzz"  # its body dropped
            b"POST /echo?4 HTTP/1.1\r\nContent-Length: 1\r\nConnection: close\r\n\r\nd")


@pytest.mark.parametrize("tls", [False, True])
@pytest.mark.parametrize("chunk", [len(PIPELINE), 7])
def test_pipelined_requests_are_answered_in_order(serve: Any, certs: CertificatePaths,
                                                  tls: bool, chunk: int) -> None:
    server = serve(tls=tls)
    with connect(server, tls_ca=certs if tls else None) as sock, \
            sock.makefile("rb") as reader:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(0, len(PIPELINE), chunk):  # all at once, or arriving while serving
            sock.sendall(PIPELINE[i:i + chunk])
        answers = [read_answer(reader) for _ in range(4)]
        assert [body for _, body in answers] == [b"POST /echo?1 b'abc'", b"ok", b"ok",
                                                 b"POST /echo?4 b'd'"]
        assert all(head.startswith(b"HTTP/1.1 200 OK\r\n") for head, _ in answers)
        assert [b"Connection: close" in head for head, _ in answers] == [False] * 3 + [True]
        assert reader.read() == b""


def test_an_error_in_a_pipeline_closes_and_drops_the_rest(serve: Any) -> None:
    server = serve()
    with connect(server) as sock, sock.makefile("rb") as reader:
        sock.sendall(OK + b"GET /nope HTTP/1.1\r\n\r\n" + OK)
        first, error = read_answer(reader), read_answer(reader)
        assert first[1] == b"ok"
        assert error[0].startswith(b"HTTP/1.1 404 ") and b"Connection: close" in error[0]
        assert reader.read() == b""  # the third request is not answered


def test_a_kept_connection_closes_after_the_idle_timeout(serve: Any,
                                                         loop_clock: LoopClock) -> None:
    server = serve(idle_timeout_seconds=30.0, header_timeout_seconds=60.0,
                   request_timeout_seconds=60.0)
    with connect(server) as sock, sock.makefile("rb") as reader:
        for _ in range(3):  # each answer starts the idle time again
            assert ask(sock, reader, OK)[1] == b"ok"
            eventually(lambda: server.idle_connections() == 1, what="idle")
            loop_clock.advance(29.0)
        loop_clock.advance(2.0)
        assert _closed(sock, 10.0)
    eventually(lambda: server.active_connections() == 0, what="closed")
    assert server.deadlines == 0  # an idle close is not a missed deadline


def test_a_later_requests_header_deadline_starts_at_its_first_byte(
        serve: Any, loop_clock: LoopClock) -> None:
    server = serve(idle_timeout_seconds=1000.0, header_timeout_seconds=50.0,
                   request_timeout_seconds=100.0)
    with connect(server) as sock, sock.makefile("rb") as reader:
        assert ask(sock, reader, OK)[1] == b"ok"
        eventually(lambda: server.idle_connections() == 1, what="idle")
        loop_clock.advance(500.0)  # idle long past both deadlines counted from the accept
        assert ask(sock, reader, OK)[1] == b"ok"
        eventually(lambda: server.idle_connections() == 1, what="idle again")
        sock.sendall(b"GET /ok HTTP/1.1\r\n")  # the next head starts, never ends
        eventually(lambda: server.idle_connections() == 0, what="the request started")
        loop_clock.advance(40.0)
        assert server.deadlines == 0
        loop_clock.advance(20.0)
        assert _closed(sock, 10.0)
    eventually(lambda: server.deadlines == 1, what="the header deadline counted")


def test_shutdown_closes_idle_connections_at_once_and_lets_a_request_finish(
        serve: Any) -> None:
    server = serve(shutdown_timeout_seconds=30.0)
    with connect(server) as idle, idle.makefile("rb") as idle_reader, \
            connect(server) as busy, busy.makefile("rb") as busy_reader:
        assert ask(idle, idle_reader, OK)[1] == b"ok"
        eventually(lambda: server.idle_connections() == 1, what="idle")
        busy.sendall(b"GET /gate HTTP/1.1\r\n\r\n")
        assert ENTERED.wait(10)
        stopper = threading.Thread(target=server.shutdown, name="shutdown-caller")
        stopper.start()
        try:
            assert _closed(idle, 10.0)
            assert stopper.is_alive()  # the request under way holds the shutdown
            GATE.set()
            head, body = read_answer(busy_reader)
            assert head.startswith(b"HTTP/1.1 200 OK\r\n") and body == b"released"
            assert b"\r\nConnection: close\r\n" in head  # not kept: shutting down
            assert busy_reader.read() == b""
        finally:
            GATE.set()
            stopper.join(10)
        assert not stopper.is_alive()


def test_at_the_cap_silent_connections_give_their_slots_before_idle_kept_ones(
        serve: Any) -> None:
    cap = 64
    server = serve(max_connections=cap, header_timeout_seconds=60.0)
    kept: list[socket.socket] = []
    fresh: list[socket.socket] = []
    try:
        for _ in range(cap):  # clients that each send one request and keep the connection
            sock = connect(server)
            with sock.makefile("rb") as reader:
                head, _ = ask(sock, reader, OK)
            if b"Connection: close" in head:
                sock.close()
            else:
                kept.append(sock)
        # Keep-alive stops below the cap (an eighth of it): the server closed the rest.
        assert len(kept) == cap - cap // 8 - 1
        eventually(lambda: server.idle_connections() == len(kept), what="idle kept")
        eventually(lambda: server.active_connections() == len(kept), what="closed ones gone")
        fresh = [connect(server) for _ in range(cap - len(kept))]  # fill up to the cap
        eventually(lambda: server.active_connections() == cap, what="at the cap")
        # Past the cap: the silent ones (incomplete heads) go first, oldest first; the idle
        # kept ones stay (closing one races with its client's next request).
        fresh += [connect(server) for _ in range(5)]
        eventually(lambda: server.evicted == 5, what="5 silent cut off for new clients")
        assert server.refused == 0 and server.idle_closed == 0
        assert all(_closed(sock, 10.0) for sock in fresh[:5])
        assert get(server, "/ok") == (200, b"ok")  # a new client is served
        assert server.evicted == 6 and server.idle_closed == 0 and server.refused == 0
        for sock in kept:  # every idle kept connection is still kept
            with sock.makefile("rb") as reader:
                assert ask(sock, reader, OK)[1] == b"ok"
    finally:
        for sock in kept + fresh:
            sock.close()


def test_a_client_at_its_cap_reuses_the_slot_of_its_own_idle_connection(serve: Any) -> None:
    server = serve(max_connections_per_peer=3, header_timeout_seconds=60.0)
    other = connect(server, source="127.0.0.3")
    with other.makefile("rb") as reader:
        assert ask(other, reader, OK)[1] == b"ok"  # idle, from another address
    mine = [connect(server, source="127.0.0.2") for _ in range(3)]
    try:
        for sock in mine:
            with sock.makefile("rb") as reader:
                assert ask(sock, reader, OK)[1] == b"ok"
        eventually(lambda: server.idle_connections() == 4, what="4 idle")
        assert get(server, "/ok", source="127.0.0.2") == (200, b"ok")
        assert server.idle_closed == 1 and server.refused == 0
        assert _closed(mine[0], 10.0)  # its own longest idle, not the other client's
        with other.makefile("rb") as reader:
            assert ask(other, reader, OK)[1] == b"ok"
    finally:
        for sock in [other, *mine]:
            sock.close()
