"""A scripted raw-socket HTTP/1.1 server for transport tests (connection-level control).

``RawServer(script)`` accepts connections on 127.0.0.1 and serves each in its own thread:
it reads requests one after the other (headers, then a Content-Length body) and asks
``script(conn_no, req_no, request)`` what to do (both numbers count from 0):

* ``bytes``: write them (a whole or broken answer) and wait for the next request;
* :class:`Close`: write ``data`` (may be empty) then close the connection, with a reset
  (``SO_LINGER`` 0) when ``reset``;
* :class:`Hang`: wait for ``release`` (at most 10 s) and then do ``then``;
* :class:`Steps`: in order, write each ``bytes`` with its own ``sendall`` and wait for each
  ``threading.Event`` (at most 10 s); a :class:`Close` among them ends the connection (a
  streamed answer, written piece by piece).

``requests`` records every request as received; ``closed[conn_no]`` is set when the client
closed that connection, ``ended[conn_no]`` when the server's side of it is closed. ``tls``
(a server ``ssl.SSLContext``) wraps accepted sockets.
:meth:`stop` closes everything and joins every thread.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass
class RawRequest:
    conn_no: int
    req_no: int
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Close:
    data: bytes = b""
    reset: bool = False


@dataclass
class Hang:
    release: threading.Event
    then: bytes | Close = field(default_factory=Close)


@dataclass
class Steps:
    steps: Sequence[bytes | threading.Event | Close]


Action = bytes | Close | Hang | Steps
Script = Callable[[int, int, RawRequest], Action]


def answer(status: int = 200, body: bytes = b'{"kind":"Ok"}', *,
           headers: dict[str, str] | None = None, reason: str = "OK") -> bytes:
    """A complete answer with a Content-Length."""
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
    for k, v in (headers or {}).items():
        head += f"{k}: {v}\r\n"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def ok(conn_no: int, req_no: int, req: RawRequest) -> Action:
    return answer()


class RawServer:
    def __init__(self, script: Script = ok, *, tls: ssl.SSLContext | None = None) -> None:
        self.script = script
        self.tls = tls
        self.requests: list[RawRequest] = []
        self.closed: list[threading.Event] = []
        self.ended: list[threading.Event] = []
        self.handshake_errors: list[BaseException] = []
        self.cond = threading.Condition()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        self._acceptor = threading.Thread(target=self._accept, name="raw-server")
        self._acceptor.start()

    @property
    def connections(self) -> int:
        with self.cond:
            return len(self.closed)

    def wait_requests(self, count: int, timeout: float = 5.0) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.requests) >= count, timeout)

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self.cond:
                conn_no = len(self.closed)
                self.closed.append(threading.Event())
                self.ended.append(threading.Event())
                self._socks.append(sock)
            t = threading.Thread(target=self._serve, args=(conn_no, sock),
                                 name=f"raw-conn-{conn_no}")
            self._threads.append(t)
            t.start()

    def _serve(self, conn_no: int, sock: socket.socket) -> None:
        sock.settimeout(10.0)
        try:
            if self.tls is not None:
                try:
                    sock = self.tls.wrap_socket(sock, server_side=True)
                except (OSError, ssl.SSLError) as exc:
                    self.handshake_errors.append(exc)
                    return
                with self.cond:
                    self._socks.append(sock)
            reader = sock.makefile("rb")
            req_no = 0
            while not self._stopping.is_set():
                req = self._read_request(reader, conn_no, req_no)
                if req is None:
                    self.closed[conn_no].set()
                    return
                with self.cond:
                    self.requests.append(req)
                    self.cond.notify_all()
                action = self.script(conn_no, req_no, req)
                req_no += 1
                if isinstance(action, Hang):
                    action.release.wait(10.0)
                    action = action.then
                if isinstance(action, Steps):
                    for step in action.steps:
                        if isinstance(step, threading.Event):
                            step.wait(10.0)
                        elif isinstance(step, Close):
                            action = step
                            break
                        else:
                            sock.sendall(step)
                    else:
                        continue
                if isinstance(action, Close):
                    if action.data:
                        sock.sendall(action.data)
                    if action.reset:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                        struct.pack("ii", 1, 0))
                    reader.close()
                    sock.close()
                    return
                sock.sendall(action)
        except OSError:
            self.closed[conn_no].set()
        finally:
            sock.close()
            self.ended[conn_no].set()

    @staticmethod
    def _read_request(reader: object, conn_no: int, req_no: int) -> RawRequest | None:
        readline = reader.readline  # type: ignore[attr-defined]
        line = readline(65537)
        if not line:
            return None
        method, target, _version = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while True:
            h = readline(65537)
            if h in (b"\r\n", b"\n", b""):
                break
            k, _, v = h.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        length = int(headers.get("content-length") or 0)
        body = reader.read(length) if length else b""  # type: ignore[attr-defined]
        return RawRequest(conn_no, req_no, method, target, headers, body)

    def stop(self) -> None:
        self._stopping.set()
        self._listener.close()
        self._acceptor.join(5.0)
        with self.cond:
            socks = list(self._socks)
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        for t in self._threads:
            t.join(5.0)
