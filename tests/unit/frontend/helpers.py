"""Helpers for the front-end tests: a route with handlers, clients, loop time the test moves
(:class:`LoopClock`), a loop the test holds still (:class:`LoopHold`) and the server-side
sockets still open in this process (:func:`open_server_sockets`)."""

from __future__ import annotations

import asyncio
import contextvars
import http.client
import os
import socket
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from pyctrl.frontend import Frontend, Reply, Request, RequestHead, text
from pyctrl.frontend.http import Handler


def echo(request: Request) -> Reply:
    return 200, f"{request.method} {request.path}?{request.head.query} {request.body!r}".encode(), \
        "text/plain"


def boom(request: Request) -> Reply:
    raise RuntimeError("handler bug")


GATE = threading.Event()  # opened by the test (or the serve fixture's teardown)
ENTERED = threading.Event()  # a worker is in wait_gate


def wait_gate(request: Request) -> Reply:
    ENTERED.set()
    GATE.wait(10)
    return text(200, "released")


def route(head: RequestHead) -> Handler | Reply:
    if head.path == "/ok":
        return text(200, "ok")
    handlers = {"/echo": echo, "/boom": boom, "/gate": wait_gate}
    return handlers.get(head.path) or text(404, "not found")


def client(server: Frontend, *, ca_file: Path | None = None,
           source: str = "127.0.0.1") -> http.client.HTTPConnection:
    port = server.address[1]
    if ca_file is not None:
        return http.client.HTTPSConnection(
            "127.0.0.1", port, timeout=10, source_address=(source, 0),
            context=ssl.create_default_context(cafile=str(ca_file)))
    return http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))


def get(server: Frontend, path: str, *, method: str = "GET", body: bytes | None = None,
        ca_file: Path | None = None, source: str = "127.0.0.1") -> tuple[int, bytes]:
    conn = client(server, ca_file=ca_file, source=source)
    try:
        conn.request(method, path, body=body)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def read_answer(reader: BinaryIO) -> tuple[bytes, bytes]:
    """One response from ``reader`` (a socket's makefile): its head and its body."""
    head = b""
    while (line := reader.readline()) not in (b"\r\n", b""):
        head += line
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return head, reader.read(length)


def ask(sock: socket.socket, reader: BinaryIO, request: bytes) -> tuple[bytes, bytes]:
    sock.sendall(request)
    return read_answer(reader)


class _SteppedLoop(asyncio.SelectorEventLoop):
    offset = 0.0

    def time(self) -> float:
        return super().time() + self.offset


class LoopClock:
    """Loop time that jumps when the test says: every event loop created while installed
    (``asyncio.new_event_loop``, as :meth:`Frontend.start` does) runs on monotonic time plus
    an offset :meth:`advance` raises. The servers' deadlines are timers on that time."""

    def __init__(self) -> None:
        self.loops: list[_SteppedLoop] = []

    def new_loop(self) -> asyncio.AbstractEventLoop:
        loop = _SteppedLoop()
        self.loops.append(loop)
        return loop

    def advance(self, seconds: float) -> None:
        """Move every loop's time on; return once the timers due by then have run."""
        for loop in self.loops:
            if loop.is_closed():
                continue
            done = threading.Event()

            def step(loop: _SteppedLoop = loop, done: threading.Event = done) -> None:
                loop.offset += seconds
                # Due with (or after) every timer the jump made due; its callback then runs
                # on the next iteration, after theirs.
                loop.call_later(0, loop.call_soon, done.set)

            loop.call_soon_threadsafe(step)
            assert done.wait(10), "the server loop did not run the step"


class _HeldLoop(asyncio.SelectorEventLoop):
    def __init__(self, hold: LoopHold) -> None:
        super().__init__()
        self._hold = hold

    def call_soon_threadsafe(self, callback: Callable[..., object], *args: object,
                             context: contextvars.Context | None = None) -> asyncio.Handle:
        handle = super().call_soon_threadsafe(callback, *args, context=context)
        with self._hold.asked:
            self._hold.calls += 1
            self._hold.asked.notify_all()
        return handle


class LoopHold:
    """A loop the test holds still: every event loop created while installed (as
    :meth:`Frontend.start` does) runs one callback that blocks it from :meth:`hold` until
    :meth:`release`, and counts the callbacks other threads hand it (``calls``), so a test
    can line up what the loop's next iteration finds (accepts, a shutdown)."""

    def __init__(self) -> None:
        self.loops: list[_HeldLoop] = []
        self.calls = 0
        self.asked = threading.Condition()
        self._held = threading.Event()
        self._go = threading.Event()

    def new_loop(self) -> asyncio.AbstractEventLoop:
        loop = _HeldLoop(self)
        self.loops.append(loop)
        return loop

    def hold(self) -> None:
        """Block the (one) loop in a callback; return once it is blocked."""
        self._go.clear()

        def block() -> None:
            self._held.set()
            self._go.wait(10)

        self.loops[-1].call_soon_threadsafe(block)
        assert self._held.wait(10), "the server loop did not run the hold"

    def release(self) -> None:
        self._go.set()

    def wait_calls(self, n: int) -> None:
        """Return once the loop was handed ``n`` callbacks in all (a shutdown hands one)."""
        with self.asked:
            assert self.asked.wait_for(lambda: self.calls >= n, 10), "no callback arrived"


def open_server_sockets(port: int) -> int:
    """The TCP sockets of this process on local port ``port`` that are not listening: the
    server's side of its connections (Linux: /proc)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] != "0A":
                    inodes.add(fields[9])
    mine = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (listdir's own descriptor)
            continue
        mine += link.startswith("socket:[") and link[8:-1] in inodes
    return mine
