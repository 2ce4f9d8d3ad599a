"""One client connection of the front end: an asyncio protocol that never blocks a thread.

Contract:

* A :class:`Conn` lives on the event loop. It reads the raw bytes the loop hands it, runs
  TLS itself over an ``ssl.SSLObject`` and two ``MemoryBIO`` s (created at the first byte,
  from the context the server gives *then*, so a reloaded certificate serves every later
  handshake), parses the head, asks the server's route what to do and buffers the body. Only
  a complete request reaches a worker thread; an idle or slow client costs a few objects on
  the loop, no thread.
* Deadlines (loop time): the TLS handshake and the head must arrive within
  ``header_timeout`` of the accept (Go's ReadHeaderTimeout), the whole request within
  ``request_timeout``; a client that misses one is cut off (the transport aborted). Writing
  the answer gets a fresh ``request_timeout``, so a client that never reads is cut off too.
* Memory: the head is at most ``max_header_bytes`` (431 above); a body is buffered only
  when the route accepted it and it is at most ``max_body_bytes``; an oversized or refused
  body is read and dropped (at most 4 times the limit) before the answer is sent.
* After an error answer the connection lingers: the write side is shut down once the answer
  is flushed and input is dropped until the client closes (at most ``LINGER_SECONDS``), so
  the client reads the answer instead of a reset. Every other answer closes at once.
"""

from __future__ import annotations

import asyncio
import enum
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from pyctrl.frontend.http import (
    Handler,
    Reply,
    Request,
    RequestHead,
    body_length,
    parse_head,
    response,
    text,
)

if TYPE_CHECKING:
    from pyctrl.frontend.server import Frontend

__all__ = ["LINGER_SECONDS", "Conn"]

LINGER_SECONDS = 1.0
_READ = 64 * 1024


class State(enum.Enum):
    HEAD = "head"  # handshake (TLS) and head
    BODY = "body"
    DRAIN = "drain"  # dropping a body before an early answer
    WORKING = "working"  # a worker has the request
    WRITING = "writing"
    LINGER = "linger"
    CLOSED = "closed"


class Conn(asyncio.Protocol):
    """One client (see module docstring)."""

    def __init__(self, server: Frontend) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.state = State.HEAD
        self.accepted_at = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._tls: ssl.SSLObject | None = None
        self._incoming: ssl.MemoryBIO | None = None
        self._outgoing: ssl.MemoryBIO | None = None
        self._handshaken = False
        self._buf = bytearray()
        self._head: RequestHead | None = None
        self._handler: Handler | None = None
        self._length = 0  # body bytes wanted (BODY) or still to drop (DRAIN)
        self._early: Reply | None = None  # the answer after DRAIN

    # -- asyncio.Protocol -----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.peer = str(peer[0]) if peer else "?"
        if not self.server.admit(self):
            self.state = State.CLOSED
            self.transport.abort()
            return
        config = self.server.config
        self.accepted_at = self.server.loop_time()
        self._arm(min(config.header_timeout_seconds, config.request_timeout_seconds),
                  self._deadline)

    def data_received(self, data: bytes) -> None:
        if self.state in (State.WORKING, State.WRITING, State.LINGER, State.CLOSED):
            return  # input past the request, or during the linger: dropped
        if self.server.context is None:
            self._feed(data)
            return
        if self._tls is None:
            self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
            self._tls = self.server.context().wrap_bio(self._incoming, self._outgoing,
                                                      server_side=True)
        assert self._incoming is not None
        self._incoming.write(data)
        try:
            if not self._handshaken:
                try:
                    self._tls.do_handshake()
                except ssl.SSLWantReadError:
                    return
                finally:
                    self._flush()
                self._handshaken = True
            while self.state in (State.HEAD, State.BODY, State.DRAIN):
                try:
                    chunk = self._tls.read(_READ)
                except ssl.SSLWantReadError:
                    break
                if not chunk:  # close_notify
                    self._lost_client()
                    return
                self._feed(chunk)
        except (ssl.SSLError, ValueError) as err:  # a failed handshake, a bad record
            self.server.note("ended", self.peer, str(err))
            self.close(abort=True)

    def eof_received(self) -> bool:
        if self.state in (State.HEAD, State.BODY):
            self._lost_client()
            return False
        if self.state is State.DRAIN:  # the client stopped sending: answer what we have
            self._answer_early()
        # Keep the transport open to write the answer (the client only half-closed);
        # asyncio closes it when we return False, which only a linger wants.
        return self.state is not State.LINGER

    def connection_lost(self, exc: Exception | None) -> None:
        self.state = State.CLOSED
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.server.release(self)

    # -- reading ------------------------------------------------------------------------
    def _feed(self, data: bytes) -> None:
        if self.state is State.DRAIN:
            self._length -= len(data)
            if self._length <= 0:
                self._answer_early()
            return
        self._buf += data
        if self.state is State.BODY:
            if len(self._buf) >= self._length:
                self._dispatch()
            return
        config = self.server.config
        end = self._buf.find(b"\r\n\r\n", max(0, len(self._buf) - len(data) - 3))
        if end < 0:
            if len(self._buf) > config.max_header_bytes:
                self.answer(text(431, "request headers too large"))
            return
        if end > config.max_header_bytes:
            self.answer(text(431, "request headers too large"))
            return
        head = parse_head(bytes(self._buf[:end]))
        del self._buf[:end + 4]
        if not isinstance(head, RequestHead):
            self.answer(head)
            return
        self._head = head
        self._arm(self.accepted_at + config.request_timeout_seconds - self.server.loop_time(),
                  self._deadline)
        length = body_length(head)
        if not isinstance(length, int):
            self.answer(length)
            return
        decision = self.server.route(head)
        if callable(decision):
            self._handler = decision
        if not callable(decision) or length > config.max_body_bytes:
            self._early = decision if not callable(decision) else text(
                413, "request body too large")
            self.state = State.DRAIN
            self._length = min(length, 4 * config.max_body_bytes) - len(self._buf)
            self._buf = bytearray()
            if self._length <= 0:
                self._answer_early()
            return
        self.state = State.BODY
        self._length = length
        if len(self._buf) >= length:
            self._dispatch()

    def _answer_early(self) -> None:
        assert self._early is not None
        self.answer(self._early)

    def _dispatch(self) -> None:
        assert self._head is not None and self._handler is not None
        assert self.transport is not None
        self.state = State.WORKING
        self.transport.pause_reading()
        body = bytes(self._buf[:self._length])
        self._buf = bytearray()
        self.server.submit(self, self._handler, Request(self._head, body, self.peer))

    # -- writing ------------------------------------------------------------------------
    def answer(self, reply: Reply) -> None:
        """Send ``reply`` and close (lingering after an error); on the loop thread."""
        if self.state in (State.WRITING, State.LINGER, State.CLOSED):
            return
        assert self.transport is not None
        data = response(reply)
        if self._tls is not None:
            view = memoryview(data)
            try:
                while view:
                    view = view[self._tls.write(view):]
            except (ssl.SSLError, ValueError) as err:
                self.server.note("ended", self.peer, str(err))
                self.close(abort=True)
                return
            self._flush()
        else:
            self.transport.write(data)
        if reply[0] < 400:
            self.state = State.WRITING
            self._arm(self.server.config.request_timeout_seconds, self._write_deadline)
            self.transport.close()  # after the buffer is flushed
            return
        self.state = State.LINGER
        self._arm(LINGER_SECONDS, self._write_deadline)  # error answers are small
        if self.transport.can_write_eof():
            self.transport.write_eof()  # a FIN once the answer is flushed
        self.transport.resume_reading()

    def _flush(self) -> None:
        assert self._outgoing is not None and self.transport is not None
        if self._outgoing.pending:
            self.transport.write(self._outgoing.read())

    def close(self, *, abort: bool = False) -> None:
        if self.transport is None or self.state is State.CLOSED:
            return
        self.state = State.CLOSED
        if abort:
            self.transport.abort()
        else:
            self.transport.close()

    def _lost_client(self) -> None:
        self.server.note("ended", self.peer, "client closed before the request was complete")
        self.close(abort=True)

    # -- deadlines ----------------------------------------------------------------------
    def _arm(self, delay: float, callback: Callable[[], None]) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.server.call_later(max(0.0, delay), callback)

    def _deadline(self) -> None:
        if self.state in (State.HEAD, State.BODY, State.DRAIN):
            phase = "header" if self._head is None else "request"
            self.server.note("deadline", self.peer, phase)
            self.close(abort=True)

    def _write_deadline(self) -> None:
        # A client that does not read its answer, or lingers past LINGER_SECONDS.
        if self.state is State.LINGER:
            self.close(abort=True)
            return
        self.server.note("deadline", self.peer, "write")
        self.close(abort=True)
