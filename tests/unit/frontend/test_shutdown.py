"""Frontend.shutdown closes the server's side of every connection it accepted before its loop
ends: admitted ones, one mid-TLS-handshake, and ones accepted as the shutdown began (refused
then), none left open for the garbage collector (on CPython 3.13.0 a transport collected after
its server closed raised in ``__del__``)."""

from __future__ import annotations

import gc
import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.frontend.helpers import LoopHold, get, open_server_sockets
from tests.waiting import eventually

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="counts sockets through /proc")

_TLS_RECORD_HEAD = b"\x16\x03\x01\x02\x00"  # a handshake record of 512 bytes: none follow


@pytest.fixture
def no_gc() -> Iterator[None]:
    """No collection during the test: a socket only the collector would close stays open."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.usefixtures("no_gc")
def test_shutdown_closes_connections_mid_handshake_and_accepted_as_it_began(
        loop_hold: LoopHold, serve: Any) -> None:
    server = serve(tls=True)
    port = server.address[1]
    handshaking = socket.create_connection(server.address, timeout=5)
    handshaking.sendall(_TLS_RECORD_HEAD)
    eventually(lambda: server.active_connections() == 1, what="the handshake under way")
    loop_hold.hold()
    # Connected while the loop is held: the loop's next iteration finds them and the
    # shutdown together, accepting them as it stops.
    racing = [socket.create_connection(server.address, timeout=5) for _ in range(8)]
    stopper = threading.Thread(target=server.shutdown, name="shutdown")
    calls = loop_hold.calls
    stopper.start()
    try:
        loop_hold.wait_calls(calls + 1)  # the shutdown handed the loop its stop
    finally:
        loop_hold.release()
    stopper.join(10)
    assert not stopper.is_alive()
    try:
        assert open_server_sockets(port) == 0
    finally:
        for sock in (handshaking, *racing):
            sock.close()


def test_shutdown_after_served_and_closed_connections_leaves_no_socket(serve: Any) -> None:
    server = serve()
    port = server.address[1]
    assert get(server, "/ok") == (200, b"ok")
    kept = socket.create_connection(server.address, timeout=5)
    eventually(lambda: open_server_sockets(port) == 1, what="the kept connection open")
    server.shutdown()
    kept.close()
    assert open_server_sockets(port) == 0
