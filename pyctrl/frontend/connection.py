"""One client connection of the front end: an asyncio protocol that never blocks a thread.

Contract:

* A :class:`Conn` lives on the event loop and knows its server as a :class:`ConnServer`.
  It runs TLS itself (a :class:`~pyctrl.frontend.tls.TLSSession` made at the first byte
  from the context the server gives *then*: a reloaded certificate serves every later
  handshake), parses the head, asks the server's route what to do and buffers the body:
  only a complete request reaches a worker thread.
* While the TLS handshake or the head of a request is incomplete the connection is
  *reading its head* (:meth:`ConnServer.reading_head` / ``head_read``): the server may cut
  it off at once to make room for a new client at a cap.
* Deadlines (loop time; Go's ReadHeaderTimeout and ReadTimeout): the TLS handshake and the
  head within ``header_timeout`` of the request's start (the accept, or a kept connection's
  first byte), the whole request within ``request_timeout``, the answer's write within a
  fresh ``request_timeout``; a client that misses one is cut off (the transport aborted).
* Memory: the head is at most ``max_header_bytes`` (431 above); a body is buffered only
  when the route accepted it and it is at most ``max_body_bytes``; an oversized or refused
  body is read and dropped (at most 4 times the limit) before the answer is sent.
* Keep-alive (as Go's net/http server): after an answer below 400 to a request whose whole
  body was read, the connection is kept when the client asked for it
  (:func:`~pyctrl.frontend.http.wants_keep_alive`), had not half-closed, and
  :meth:`ConnServer.keep_alive` allows it; otherwise the answer says ``Connection: close``.
  A kept connection reads no further until its answer is flushed, then waits for the next
  request's first byte at most ``idle_timeout`` (then it is closed, quietly); while it
  waits it is *idle*, and the server may close it at once (shutdown, or a new client needs
  its slot). Bytes sent past a request (pipelining) start the next request, answered in
  order, one at a time (a client that never reads meets the write deadline).
* After an error answer the connection lingers: the write side is shut down once the answer
  is flushed and input is dropped until the client closes (at most ``LINGER_SECONDS``), so
  the client reads the answer instead of a reset. Every other answer that does not keep
  the connection closes it once flushed.
"""

from __future__ import annotations

import asyncio
import enum
import ssl
from collections.abc import Callable
from typing import Protocol, cast

from pyctrl.clock import RealClock
from pyctrl.frontend.http import (
    Handler,
    Reply,
    Request,
    RequestHead,
    Route,
    body_length,
    response,
    take_head,
    text,
    wants_keep_alive,
)
from pyctrl.frontend.options import FrontendOptions
from pyctrl.frontend.tls import TLSSession

__all__ = ["LINGER_SECONDS", "Conn", "ConnServer"]

LINGER_SECONDS = 1.0
_REAL = RealClock()


class State(enum.Enum):
    HEAD = "head"  # handshake (TLS) and head
    BODY = "body"
    DRAIN = "drain"  # dropping a body before an early answer
    WORKING = "working"  # a worker has the request
    WRITING = "writing"
    IDLE = "idle"  # kept alive: waiting for the next request's first byte
    LINGER = "linger"
    CLOSED = "closed"


_READING = (State.HEAD, State.BODY, State.DRAIN)


class ConnServer(Protocol):
    """What a :class:`Conn` needs of its server (:class:`pyctrl.frontend.Frontend`), on the
    loop thread (the slots: :mod:`pyctrl.frontend.slots`; ``submit``: to a worker)."""

    config: FrontendOptions
    context: Callable[[], ssl.SSLContext] | None
    route: Route
    def admit(self, conn: Conn) -> bool: ...
    def release(self, conn: Conn) -> None: ...
    def keep_alive(self, conn: Conn) -> bool: ...
    def idle(self, conn: Conn) -> None: ...
    def busy(self, conn: Conn) -> None: ...
    def reading_head(self, conn: Conn) -> None: ...
    def head_read(self, conn: Conn) -> None: ...
    def submit(self, conn: Conn, handler: Handler, request: Request) -> None: ...
    def note(self, kind: str, peer: str, detail: str) -> None: ...
    def loop_time(self) -> float: ...
    def call_later(self, delay: float, callback: Callable[[], None]) -> asyncio.TimerHandle: ...
    def call_soon(self, callback: Callable[[], None]) -> None: ...


class Conn(asyncio.Protocol):
    """One client (see module docstring)."""

    def __init__(self, server: ConnServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.state = State.HEAD
        self.started_at = 0.0  # loop time the current request started (accept, first byte)
        self.served = 0  # answers written
        self._timer: asyncio.TimerHandle | None = None
        self._tls: TLSSession | None = None
        self._quiet = True  # no byte of the current request received yet
        self._buf = bytearray()
        self._head: RequestHead | None = None
        self._handler: Handler | None = None
        self._length = 0  # body bytes wanted (BODY) or still to drop (DRAIN)
        self._early: Reply | None = None  # the answer after DRAIN
        self._must_close = False  # the client half-closed, or a body was not read whole
        self._kept = False  # the answer being written keeps the connection

    # -- asyncio.Protocol -----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.peer = str(peer[0]) if peer else "?"
        if not self.server.admit(self):
            self.state = State.CLOSED
            self.transport.abort()
            return
        # resume_writing then says when an answer is wholly handed to the kernel.
        self.transport.set_write_buffer_limits(high=0)
        self._start_request()

    def data_received(self, data: bytes) -> None:
        if self.state is State.IDLE:
            self._start_request()
        if self.state not in _READING:
            return  # during the linger: dropped (reading pauses while a request is served)
        self._quiet = False
        if self.server.context is None:
            self._feed(data)
            return
        if self._tls is None:
            self._tls = TLSSession(self.server.context())
        self._tls.feed(data)
        if not self._tls.handshaken:
            try:
                done = self._tls.handshake()
            except (ssl.SSLError, ValueError) as err:  # a failed handshake
                self._flush()  # its alert
                self._tls_failed(err)
                return
            self._flush()
            if not done:
                return
        self._pump()

    def eof_received(self) -> bool:
        if self.state is State.IDLE:  # the client closed a kept connection: fine
            self.close()
            return False
        if self.state in (State.HEAD, State.BODY):
            self._lost_client()
            return False
        self._must_close = True
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

    def resume_writing(self) -> None:
        # The answer left the write buffer: a kept connection reads the next request. Called
        # later, from the loop, so a long pipeline is answered one request per callback.
        if self.state is State.WRITING and self._kept:
            self.server.call_soon(self._next_request)

    # -- reading ------------------------------------------------------------------------
    def _start_request(self) -> None:
        config = self.server.config
        self.state = State.HEAD
        self.server.busy(self)
        self.server.reading_head(self)
        self.started_at = self.server.loop_time()
        self._arm(min(config.header_timeout_seconds, config.request_timeout_seconds),
                  self._deadline)

    def _pump(self) -> None:
        """Feed what TLS decrypts while a request is read (what is left waits in the BIO)."""
        assert self._tls is not None
        try:
            while self.state in _READING:
                chunk = self._tls.read()
                if chunk is None:
                    return
                if not chunk:  # close_notify
                    self._lost_client()
                    return
                self._feed(chunk)
        except (ssl.SSLError, ValueError) as err:  # a bad record
            self._tls_failed(err)

    def _feed(self, data: bytes) -> None:
        if self.state is State.DRAIN:
            self._length -= len(data)
            if self._length <= 0:
                if self._length < 0:  # past the dropped body: the next request (pipelined)
                    self._buf += data[self._length:]
                self._answer_early()
            return
        start = max(0, len(self._buf) - 3)
        self._buf += data
        if self.state is State.BODY:
            if len(self._buf) >= self._length:
                self._dispatch()
            return
        self._read_head(start)

    def _read_head(self, start: int) -> None:
        config = self.server.config
        head = take_head(self._buf, start, config.max_header_bytes)
        if head is None:
            return
        self.server.head_read(self)
        if not isinstance(head, RequestHead):
            self.answer(head)
            return
        self._head = head
        self._arm(self.started_at + config.request_timeout_seconds - self.server.loop_time(),
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
            drop = min(length, 4 * config.max_body_bytes)
            self._must_close = self._must_close or drop < length
            if len(self._buf) >= drop:
                del self._buf[:drop]  # what follows is the next request
                self._answer_early()
            else:
                self._length = drop - len(self._buf)
                self._buf = bytearray()
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
        del self._buf[:self._length]  # what follows is the next request
        self.server.submit(self, self._handler,
                           Request(self._head, body, self.peer, _REAL.monotonic()))

    def _next_request(self) -> None:
        """The kept answer is flushed: wait for the next request, or read the pipelined one."""
        if self.state is not State.WRITING or self.transport is None:
            return  # closed meanwhile
        if self._must_close:
            self.close()
            return
        self.state = State.IDLE
        self._quiet = True
        self._head, self._handler, self._early, self._kept = None, None, None, False
        self.server.idle(self)
        self._arm(self.server.config.idle_timeout_seconds, self._idle_deadline)
        self.transport.resume_reading()
        pending = self._tls is not None and self._tls.pending()
        if not self._buf and not pending:
            return
        self._start_request()
        self._quiet = False
        if self._buf:
            self._read_head(0)
        if self._tls is not None:
            self._pump()

    # -- writing ------------------------------------------------------------------------
    def answer(self, reply: Reply) -> None:
        """Send ``reply``; then keep the connection, close it or linger after an error (see
        the module docstring); on the loop thread."""
        if self.state not in (*_READING, State.WORKING):
            return
        assert self.transport is not None
        self.served += 1
        head = self._head
        keep = (reply[0] < 400 and head is not None and not self._must_close
                and head.method != "HEAD"  # its answer carries a body: framing would break
                and wants_keep_alive(head) and self.server.keep_alive(self))
        data = response(reply, keep_alive=keep,
                        version=head.version if head is not None else "HTTP/1.1")
        if self._tls is not None:
            try:
                self._tls.write(data)
            except (ssl.SSLError, ValueError) as err:
                self._tls_failed(err)
                return
            self._flush()
        else:
            self.transport.write(data)
        if reply[0] >= 400:
            self.state = State.LINGER
            self._arm(LINGER_SECONDS, self._write_deadline)  # error answers are small
            if self.transport.can_write_eof():
                self.transport.write_eof()  # a FIN once the answer is flushed
            self.transport.resume_reading()
            return
        self.state = State.WRITING
        self._kept = keep
        self._arm(self.server.config.request_timeout_seconds, self._write_deadline)
        if not keep:
            self.transport.close()  # after the buffer is flushed
            return
        self.transport.pause_reading()  # the next request waits for this answer's flush
        if not self.transport.get_write_buffer_size():
            self.server.call_soon(self._next_request)

    def _flush(self) -> None:
        assert self._tls is not None and self.transport is not None
        if out := self._tls.outgoing():
            self.transport.write(out)

    def close(self, *, abort: bool = False) -> None:
        """Close (once the buffer is flushed) or abort; an abort also cuts a closing one."""
        if self.transport is None or (self.state is State.CLOSED and not abort):
            return
        self.state = State.CLOSED
        if abort:
            self.transport.abort()
        else:
            self.transport.close()

    def close_for_shutdown(self) -> None:
        """Close the connection unless a complete request is being answered on it: an idle
        one, or one without a byte received, closes; one still reading a request (a slow
        client can not hold the stop) is cut off."""
        if self.state is State.IDLE or (self.state is State.HEAD and self._quiet):
            self.close()
        elif self.state in _READING:
            self.close(abort=True)

    def _lost_client(self) -> None:
        if self.served and self._head is None and not self._buf:
            self.close()  # a kept connection closed between requests: nothing was lost
            return
        self.server.note("ended", self.peer, "client closed before the request was complete")
        self.close(abort=True)

    def _tls_failed(self, err: Exception) -> None:
        self.server.note("ended", self.peer, str(err))
        self.close(abort=True)

    # -- deadlines ----------------------------------------------------------------------
    def _arm(self, delay: float, callback: Callable[[], None]) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.server.call_later(max(0.0, delay), callback)

    def _deadline(self) -> None:
        if self.state in _READING:
            phase = "header" if self._head is None else "request"
            self.server.note("deadline", self.peer, phase)
            self.close(abort=True)

    def _idle_deadline(self) -> None:
        if self.state is State.IDLE:
            self.server.note("ended", self.peer, "idle timeout")
            self.close()

    def _write_deadline(self) -> None:
        # A client that does not read its answer, or lingers past LINGER_SECONDS.
        if self.state is State.LINGER:
            self.close(abort=True)
            return
        if self.state is State.WRITING:
            self.server.note("deadline", self.peer, "write")
            self.close(abort=True)
