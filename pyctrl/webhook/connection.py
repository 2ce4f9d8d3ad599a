"""One client connection of the webhook server: deadline-bounded I/O and minimal HTTP/1.1.

Contract:

* :class:`Connection` holds the client's current socket (raw, then TLS) and one absolute
  deadline (real monotonic time, since sockets time out on the kernel's clock). Every read
  gets only the time left, so the deadline bounds the whole request, not each read; past it
  reads raise :class:`Deadline`. :meth:`Connection.abort` shuts the socket down from another
  thread, which wakes a blocked read (it sees EOF) without closing the fd under it.
* :func:`read_head` reads the request line and headers (at most ``max_header_bytes``) and
  returns a :class:`RequestHead`, a :data:`Reply` for a malformed or oversized head, or None
  when the client went away.
* :meth:`Connection.linger` is the "lingering close" of HTTP servers: after an error answer
  that may precede the end of the request, half-close and discard input until the client
  closes (bounded), so the client reads the answer instead of a connection reset.
"""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass
from http import HTTPStatus

from pyctrl.clock import RealClock

__all__ = ["Connection", "Deadline", "Reply", "RequestHead", "read_head", "response", "text"]

_REAL = RealClock()
_LINGER_SECONDS = 1.0

Reply = tuple[int, bytes, str]  # status, body, content type


def text(code: int, message: str) -> Reply:
    """A plain-text reply."""
    return code, message.encode(), "text/plain; charset=utf-8"


def response(reply: Reply) -> bytes:
    """The bytes of an HTTP/1.1 response that closes the connection."""
    code, body, content_type = reply
    head = (f"HTTP/1.1 {code} {HTTPStatus(code).phrase}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    return head.encode("latin-1") + body


class Deadline(Exception):
    """The connection's total deadline passed."""


class Connection:
    """One client: its current socket and its deadline (see module docstring)."""

    __slots__ = ("deadline", "sock")

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self.sock = sock
        self.deadline = _REAL.monotonic() + timeout

    def remaining(self) -> float:
        """Seconds left before the deadline; raises :class:`Deadline` when none are."""
        left = self.deadline - _REAL.monotonic()
        if left <= 0:
            raise Deadline()
        return left

    def recv(self, size: int) -> bytes:
        """Up to ``size`` bytes (b"" at EOF), waiting at most until the deadline."""
        self.sock.settimeout(self.remaining())
        try:
            return self.sock.recv(size)
        except TimeoutError as err:
            raise Deadline() from err

    def drain(self, length: int) -> None:
        """Read and drop up to ``length`` bytes (within the deadline)."""
        while length > 0:
            chunk = self.recv(min(length, 64 * 1024))
            if not chunk:
                return
            length -= len(chunk)

    def abort(self) -> None:
        """Shut the socket down (from any thread); the serving thread then sees EOF."""
        # socket.socket.shutdown on purpose: SSLSocket.shutdown also drops its SSL object,
        # which the connection thread may be using.
        with contextlib.suppress(OSError):
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)

    def linger(self) -> None:
        """Half-close, then discard input until the client closes (at most 1 s)."""
        with contextlib.suppress(OSError):
            socket.socket.shutdown(self.sock, socket.SHUT_WR)
            deadline = _REAL.monotonic() + _LINGER_SECONDS
            while (left := deadline - _REAL.monotonic()) > 0:
                self.sock.settimeout(left)
                # The raw bytes, undecrypted: they are thrown away anyway.
                if not socket.socket.recv(self.sock, 64 * 1024):
                    return


@dataclass(frozen=True, slots=True)
class RequestHead:
    """A parsed request line and headers; ``rest`` is what was read past the head."""

    method: str
    path: str  # without the query string
    headers: dict[str, str]  # lower-case names
    rest: bytes


def read_head(conn: Connection, max_header_bytes: int) -> RequestHead | Reply | None:
    """Read and parse the request head (see module docstring)."""
    buf = bytearray()
    while (end := buf.find(b"\r\n\r\n")) < 0:
        if len(buf) > max_header_bytes:
            return text(431, "request headers too large")
        chunk = conn.recv(64 * 1024)
        if not chunk:
            return None
        buf += chunk
    if end > max_header_bytes:
        return text(431, "request headers too large")
    lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return text(400, "bad request line")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            return text(400, "bad header line")
        headers[name.strip().lower()] = value.strip()
    return RequestHead(parts[0], parts[1].split("?", 1)[0], headers, bytes(buf[end + 4:]))
