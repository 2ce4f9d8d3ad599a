"""The front end: one event-loop thread owns every connection; a few workers handle requests.

Contract:

* :class:`Frontend` listens on ``host:port`` and serves HTTP/1.1 (HTTPS when given a
  ``context`` function, called for every new connection, so a reloaded certificate serves
  the next handshake). One thread, ``<name>-loop``, runs an asyncio event loop that accepts,
  TLS-handshakes and reads every connection without blocking (:mod:`pyctrl.frontend.
  connection`); only a complete request is handed to one of ``workers`` threads
  (``<name>-worker-<i>``), which runs the route's handler and hands the answer back to the
  loop. So a connection that is idle or slow costs memory (a few KiB), never a thread, and
  valid requests are answered while thousands of such connections are open.
* Bounds (:class:`FrontendOptions`): ``max_connections`` open at once and
  ``max_connections_per_peer`` from one client address; the TLS handshake plus the request
  head within ``header_timeout_seconds`` of the request's start (the accept, or the first
  byte of a later request on a kept connection), the whole request within
  ``request_timeout_seconds``; heads above ``max_header_bytes`` answered 431, bodies above
  ``max_body_bytes`` 413; the listen ``backlog``.
* Keep-alive (HTTP/1.1 persistent connections, as Go's net/http server; the per-connection
  rules are in :mod:`pyctrl.frontend.connection`): a kept connection waits at most
  ``idle_timeout_seconds`` for its next request (0 turns keep-alive off) and serves at most
  ``max_requests_per_connection`` requests. :meth:`keep_alive` refuses to keep any
  connection while shutting down or while ``max_connections`` minus an eighth of it (the
  keep-alive threshold) or more are open, so a server near its cap hands slots back.
* A new connection above a cap takes the slot of one already open, of the same client
  address for the per-address cap, of any for the global one: first the connection whose
  request head has been incomplete longest (its TLS handshake or head not done since the
  accept or, on a kept connection, since the request's first byte; cut off, counted in
  :attr:`evicted`), else the idle kept connection idle longest (closed, counted in
  :attr:`idle_closed`). A client that sends a whole request head promptly is so served
  whatever number of idle or slow connections others (or the same address) hold: its
  connection is the newest, the last to go. Incomplete heads go before idle kept
  connections because closing a kept connection races with the client's next request on
  it, which a client does not resend when it is a POST (Go's transport does not; the
  measurement is in docs/DESIGN.md). Connections
  with a complete head (a body being read, a request being answered) are never taken. With
  nothing to take, the new connection is accepted and closed at once (counted in
  :attr:`refused`). The bookkeeping is :class:`~pyctrl.frontend.slots.Slots`'; a
  connection sees the server only as the :class:`~pyctrl.frontend.connection.ConnServer`
  it implements.
* :meth:`bind` (or else :meth:`start`) binds synchronously (a busy port raises ``OSError``
  to the caller); :meth:`start` returns once the loop serves. :meth:`shutdown` is graceful
  and bounded: it closes the listener and, at once, every connection without a complete
  request (idle ones, kept or not a byte received yet, close; ones still reading a request
  are cut off, so a slow client can not hold the stop), lets the requests under way (with
  a worker, or their answers being written) finish (their answers say ``Connection:
  close``), aborts whatever is still open after ``shutdown_timeout_seconds`` (every
  connection accepted, admitted or not, is closed before the loop ends), then joins the
  loop thread and the workers (a handler still running then is logged); it is idempotent.
* :meth:`start` raises the process's soft open-file limit when it is below
  ``max_connections`` plus some headroom (up to the hard limit; Go's runtime raises it at
  start-up), and logs a warning when even the hard limit is below.
* A handler that raises is answered 500 and logged as ``request handler failed`` through
  :class:`pyctrl._errorlog.ErrorLog` (its traceback at most once a minute per raise
  location, at most one line per 10 s otherwise, counting the rest), so a bug every request
  meets costs a few lines, not one per request.
* Deadlines run on the event loop's monotonic clock: they bound real sockets, so they are
  real time whatever Clock the rest of the program uses.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import resource
import socket
import ssl
import threading
from collections.abc import Callable

import structlog

from pyctrl._errorlog import ErrorLog
from pyctrl.clock import RealClock
from pyctrl.frontend.connection import Conn
from pyctrl.frontend.http import Handler, Reply, Request, Route, text
from pyctrl.frontend.options import FrontendOptions
from pyctrl.frontend.slots import Slots

__all__ = ["Frontend"]

log = structlog.get_logger(__name__)

_REAL = RealClock()
_ACCEPT_BATCH = 32  # connections accepted per loop iteration
_FD_HEADROOM = 256  # files besides client connections (listeners, API clients, logs)
_LOG_INTERVAL = 10.0  # at most one line per interval for floods (refusals, deadlines)
_JOIN_GRACE = 0.1  # for idle workers to see their stop after the connections drained
_CLOSE_ROUNDS = 16  # loop iterations the last aborts may take (each needs two at most)


_Work = tuple[Conn, Handler, Request]


class Frontend:
    """One listening server (see module docstring)."""

    def __init__(self, name: str, config: FrontendOptions, route: Route, *,
                 context: Callable[[], ssl.SSLContext] | None = None) -> None:
        self.name = name
        self.config = config
        self.route = route
        self.context = context
        self.deadlines = 0  # connections cut off by a deadline
        self._lock = threading.Lock()
        self._started = False
        self._closing = False
        self._listener: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Future[float] | None = None  # result: the drain budget
        self._serving = threading.Event()
        self._error: BaseException | None = None
        self._threads: list[threading.Thread] = []
        self._queue: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._slots = Slots(name, config, self._due)  # loop-thread state from here on
        self._made: set[Conn] = set()  # every connection made, until its connection_lost
        self._draining = False
        self._drained: asyncio.Event | None = None
        self._errors = ErrorLog(log, burst=1)  # a handler bug hit by every request
        self._next_log = {"refused": 0.0, "deadline": 0.0, "loop": 0.0, "idle": 0.0,
                          "evicted": 0.0}

    # -- public -------------------------------------------------------------------------
    @property
    def accepted(self) -> int:
        """Connections admitted since the start."""
        return self._slots.accepted

    @property
    def refused(self) -> int:
        """Connections closed at once because of a cap."""
        return self._slots.refused

    @property
    def idle_closed(self) -> int:
        """Idle kept connections closed for a new one."""
        return self._slots.idle_closed

    @property
    def evicted(self) -> int:
        """Connections without a complete head cut off for a new one."""
        return self._slots.evicted

    @property
    def address(self) -> tuple[str, int]:
        """The bound address (useful with ``port=0``); only valid after :meth:`start`."""
        if self._listener is None:
            raise RuntimeError(f"the {self.name} server is not started")
        host, port = self._listener.getsockname()[:2]
        return str(host), int(port)

    def active_connections(self) -> int:
        """Connections open now (admitted, not yet closed)."""
        return len(self._slots.conns)

    def idle_connections(self) -> int:
        """Kept connections waiting for their next request now."""
        return self._slots.idle_count()

    def bind(self) -> None:
        """Create the listening socket now (idempotent); a busy port raises ``OSError``.
        :meth:`start` binds when this was not called."""
        with self._lock:
            if self._listener is not None:
                return
            config = self.config
            family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
            self._listener = socket.create_server((config.host, config.port), family=family,
                                                  backlog=config.backlog)

    def start(self) -> None:
        """Bind, start the loop and the workers; return once serving (see module docstring)."""
        with self._lock:
            if self._started:
                raise RuntimeError(f"the {self.name} server is already started")
            self._started = True
        try:
            self.bind()
        except BaseException:
            with self._lock:
                self._started = False
            raise
        self._check_fd_limit()
        loop = asyncio.new_event_loop()
        loop.set_exception_handler(self._loop_error)
        self._loop, self._stop = loop, loop.create_future()
        self._threads = [threading.Thread(target=self._run_loop, name=f"{self.name}-loop",
                                          daemon=True)]
        self._threads += [threading.Thread(target=self._work, name=f"{self.name}-worker-{i}",
                                           daemon=True) for i in range(self.config.workers)]
        for t in self._threads:
            t.start()
        self._serving.wait()
        if self._error is not None:
            self.shutdown()
            raise self._error

    def shutdown(self) -> None:
        """Stop accepting, close idle connections, let requests under way finish, join the
        threads (bounded, idempotent; see the module docstring)."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
            if not self._started:  # bound at most: nothing runs
                if self._listener is not None:
                    self._listener.close()
                return
        budget = self.config.shutdown_timeout_seconds
        deadline = _REAL.monotonic() + budget
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                self._loop.call_soon_threadsafe(self._stop_serving, budget)
        # The loop first: a request under way may still reach a worker while it drains.
        looper, workers = self._threads[:1], self._threads[1:]
        for t in looper:
            t.join(max(0.0, deadline - _REAL.monotonic()) + _JOIN_GRACE)
        for _ in workers:
            self._queue.put(None)
        for t in workers:
            t.join(max(_JOIN_GRACE, deadline - _REAL.monotonic()))
        stuck = [t.name for t in self._threads if t.is_alive()]
        if stuck:
            log.error("server threads still running after the shutdown timeout",
                      server=self.name, threads=stuck)
        if self._listener is not None:
            self._listener.close()
        log.info("server stopped", server=self.name)

    # -- the loop thread ----------------------------------------------------------------
    def _run_loop(self) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve())
        except BaseException as err:
            self._error = err
        finally:
            self._serving.set()
            with contextlib.suppress(RuntimeError):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _serve(self) -> None:
        loop, stop, listener = self._loop, self._stop, self._listener
        assert loop is not None and stop is not None and listener is not None
        # asyncio accepts up to ``backlog`` connections per wake-up of the loop; a small
        # batch keeps a reconnect storm from holding the loop for one long stretch, while
        # listening again with the configured backlog keeps the kernel's queue long.
        server = await loop.create_server(self._connection, sock=listener,
                                          backlog=_ACCEPT_BATCH)
        listener.listen(self.config.backlog)
        self._drained = asyncio.Event()
        self._serving.set()
        budget = await stop
        # Accept no more, then let the accepts under way (a task each) make their transports
        # while the server is open: asyncio leaves one made for a closed server half-made,
        # its socket open until the garbage collector finds it.
        loop.remove_reader(listener.fileno())
        if accepting := asyncio.all_tasks() - {asyncio.current_task()}:
            await asyncio.wait(accepting, timeout=budget)
        server.close()
        self._draining = True
        for conn in list(self._slots.conns):
            conn.close_for_shutdown()
        if self._slots.conns:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drained.wait(), budget)
        await self._close_all()

    def _connection(self) -> Conn:
        conn = Conn(self)
        self._made.add(conn)
        return conn

    async def _close_all(self) -> None:
        """Abort every connection made (admitted, refused, mid-handshake, closing) and wait
        for its connection_lost, which closes its socket: none outlives the loop."""
        for _ in range(_CLOSE_ROUNDS):
            if not self._made:
                return
            for conn in list(self._made):
                conn.close(abort=True)  # one not yet connection_made refuses itself then
            await asyncio.sleep(0)
        log.error("connections still open after the shutdown", server=self.name,
                  connections=len(self._made))

    def _stop_serving(self, budget: float) -> None:
        if self._stop is not None and not self._stop.done():
            self._stop.set_result(budget)

    def loop_time(self) -> float:
        assert self._loop is not None
        return self._loop.time()

    def call_later(self, delay: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        assert self._loop is not None
        return self._loop.call_later(delay, callback)

    def call_soon(self, callback: Callable[[], None]) -> None:
        assert self._loop is not None
        self._loop.call_soon(callback)

    # The connections' side (:class:`~pyctrl.frontend.connection.ConnServer`), loop thread.
    def admit(self, conn: Conn) -> bool:
        """Whether ``conn`` may be served (not while shutting down; the caps: Slots.admit)."""
        return not self._closing and self._slots.admit(conn)

    def release(self, conn: Conn) -> None:
        self._made.discard(conn)
        if self._slots.release(conn) and self._draining and not self._slots.conns \
                and self._drained is not None:
            self._drained.set()

    def keep_alive(self, conn: Conn) -> bool:
        """Whether ``conn`` may stay open for another request (see module docstring)."""
        return (self.config.idle_timeout_seconds > 0 and not self._draining
                and not self._closing and self._slots.may_keep(conn))

    def idle(self, conn: Conn) -> None:
        self._slots.idle(conn)

    def busy(self, conn: Conn) -> None:
        self._slots.busy(conn)

    def reading_head(self, conn: Conn) -> None:
        self._slots.reading_head(conn)

    def head_read(self, conn: Conn) -> None:
        self._slots.head_read(conn)

    def note(self, kind: str, peer: str, detail: str) -> None:
        """A connection ended early: a deadline (counted, logged at most every 10 s) or
        anything else (a reset, a failed handshake: debug)."""
        if kind != "deadline":
            log.debug("connection ended", server=self.name, client=peer, error=detail)
            return
        self.deadlines += 1
        if self._due("deadline"):
            log.info("connection deadline exceeded; closing", server=self.name, client=peer,
                     phase=detail, deadlines_total=self.deadlines)

    def submit(self, conn: Conn, handler: Handler, request: Request) -> None:
        self._queue.put((conn, handler, request))

    def _due(self, what: str) -> bool:
        now = _REAL.monotonic()
        if now < self._next_log[what]:
            return False
        self._next_log[what] = now + _LOG_INTERVAL
        return True

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
        # accept() failing with EMFILE lands here (asyncio retries a second later).
        if self._due("loop"):
            log.error("server event loop error", server=self.name,
                      message=str(context.get("message")), error=repr(context.get("exception")))

    def _check_fd_limit(self) -> None:
        # As Go's runtime does at start-up, raise the soft open-file limit (often 1024) when
        # the connection cap needs more; only as far as needed, never above the hard limit.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = self.config.max_connections + _FD_HEADROOM
        if soft == resource.RLIM_INFINITY or soft >= want:
            return
        target = want if hard == resource.RLIM_INFINITY else min(hard, want)
        if target > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
                log.info("raised the open-file limit for the connection cap", server=self.name,
                         nofile=target, previous=soft)
                soft = target
            except (ValueError, OSError) as err:
                log.debug("could not raise the open-file limit", error=str(err))
        if soft < want:
            log.warning("the open-file limit is below the connection cap; connections past it "
                        "fail to be accepted", server=self.name, nofile=soft,
                        max_connections=self.config.max_connections)

    # -- workers ------------------------------------------------------------------------
    def _work(self) -> None:
        loop = self._loop
        assert loop is not None
        while (item := self._queue.get()) is not None:
            conn, handler, request = item
            reply = self._call(handler, request)
            with contextlib.suppress(RuntimeError):  # the loop closed: shutdown cut it off
                loop.call_soon_threadsafe(conn.answer, reply)

    def _call(self, handler: Handler, request: Request) -> Reply:
        try:
            return handler(request)
        except Exception as err:
            self._errors.failure("request handler failed", err, server=self.name,
                                 path=request.path)
            return text(500, "internal error")

