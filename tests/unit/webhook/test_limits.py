"""Issue 12 item 7: a total deadline per request, a connection cap, a listen backlog and a
bounded stop, shown with real sockets on 127.0.0.1 and short configured deadlines."""

from __future__ import annotations

import contextlib
import shutil
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest

from pyctrl.webhook import CertificatePaths, WebhookServer
from tests.unit.webhook.helpers import Start, request
from tests.unit.webhook.helpers import closed as _closed
from tests.waiting import eventually

HEADERS = (b"POST /allow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           b"Content-Length: 2\r\n\r\n{}")
CLIENT_HELLO_START = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(64)


def _dribble(sock: socket.socket, payload: bytes, interval: float, give_up: float) -> float:
    """Send ``payload`` one byte every ``interval`` s (the wait for a close is the pacing);
    return the seconds until the server closed the connection, or ``give_up``."""
    begin = time.monotonic()
    for i in range(len(payload)):
        try:
            sock.sendall(payload[i:i + 1])
        except OSError:
            return time.monotonic() - begin
        if _closed(sock, interval):
            return time.monotonic() - begin
        if time.monotonic() - begin >= give_up:
            break
    return give_up


def _tls(port: int, ca_file: Path) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(ca_file))
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def _webhook_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("webhook-"))


SERVING_THREADS = ["webhook-certwatcher", "webhook-loop", *(f"webhook-worker-{i}"
                                                             for i in range(16))]


def test_slow_loris_sending_headers_is_cut_off_at_the_deadline(
        start: Start, certs: CertificatePaths) -> None:
    server = start(certs.ca_file.parent, request_timeout_seconds=1.0)
    with _tls(server.port, certs.ca_file) as sock:
        elapsed = _dribble(sock, HEADERS * 4, interval=0.5, give_up=5.0)
    # A per-read timeout never fires for a byte every 0.5 s; the total deadline does.
    assert 0.9 <= elapsed < 3.5
    assert request(server.port, certs.ca_file, "GET", "/healthz") == (200, b"ok")


def test_slow_loris_in_the_tls_handshake_is_cut_off_at_the_deadline(
        start: Start, certs: CertificatePaths) -> None:
    server = start(certs.ca_file.parent, request_timeout_seconds=1.0)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        elapsed = _dribble(sock, CLIENT_HELLO_START, interval=0.5, give_up=5.0)
    assert 0.9 <= elapsed < 3.5


def test_connections_above_the_cap_make_room_and_cost_no_thread(
        start: Start, certs: CertificatePaths) -> None:
    server = start(certs.ca_file.parent, max_connections=4, request_timeout_seconds=30.0)
    before = threading.active_count()
    clients = [socket.create_connection(("127.0.0.1", server.port), timeout=5)
               for _ in range(12)]
    try:
        eventually(lambda: server.evicted == 8 and server.active_connections() == 4,
                   what="4 held, 8 evicted")
        assert threading.active_count() == before
        assert _webhook_threads() == sorted(SERVING_THREADS)
        # The newest four are held (waiting for a TLS hello); each of the others, never
        # having sent a byte, gave its slot to a newer one.
        assert [_closed(c, 0.05) for c in clients[8:]] == [False] * 4
        assert [_closed(c, 2.0) for c in clients[:8]] == [True] * 8
    finally:
        for c in clients:
            c.close()
    eventually(lambda: server.active_connections() == 0, what="held connections ended")
    assert request(server.port, certs.ca_file, "GET", "/healthz") == (200, b"ok")


def test_stop_is_bounded_with_slow_clients_connected(
        start: Start, certs: CertificatePaths) -> None:
    server = start(certs.ca_file.parent, request_timeout_seconds=60.0)
    in_handshake = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    in_headers = _tls(server.port, certs.ca_file)
    in_headers.sendall(HEADERS[:20])
    in_body = _tls(server.port, certs.ca_file)
    in_body.sendall(HEADERS.replace(b"Content-Length: 2", b"Content-Length: 900")[:-1])
    clients: list[socket.socket] = [in_handshake, in_headers, in_body]
    try:
        eventually(lambda: server.active_connections() == 3, what="3 slow clients held")
        begin = time.monotonic()
        server.shutdown()
        assert time.monotonic() - begin < 2.0  # (60 s request deadline)
        assert server.active_connections() == 0
        assert _webhook_threads() == []
        assert [_closed(c, 2.0) for c in clients] == [True] * 3
    finally:
        for c in clients:
            c.close()


SOMAXCONN = int(Path("/proc/sys/net/core/somaxconn").read_text())


def _listen_backlog(port: int) -> int:
    out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True,
                         check=True, timeout=10).stdout.split()
    return int(out[2])  # State Recv-Q Send-Q(=backlog for listening sockets) ...


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss(8) to read the backlog")
@pytest.mark.parametrize(("kwargs", "backlog"), [({}, min(1024, SOMAXCONN)),
                                                  ({"backlog": 7}, 7)])
def test_listen_backlog(start: Start, certs: CertificatePaths, kwargs: dict[str, int],
                        backlog: int) -> None:
    server = start(certs.ca_file.parent, **kwargs)
    assert _listen_backlog(server.port) == backlog


def test_backlog_absorbs_a_burst_while_connections_are_held(
        start: Start, certs: CertificatePaths) -> None:
    # 100 connections at once: the kernel queues them all (no SYN dropped and retried a
    # second later); the first few are held, the rest refused promptly by the cap.
    server: WebhookServer = start(certs.ca_file.parent, max_connections=2)
    clients: list[socket.socket] = []
    try:
        for _ in range(100):
            # A dropped SYN is retried after 1 s: with a short backlog this times out.
            clients.append(socket.create_connection(("127.0.0.1", server.port), timeout=0.9))
    finally:
        for c in clients:
            with contextlib.suppress(OSError):
                c.close()
    eventually(lambda: server.active_connections() == 0, what="held connections ended")
