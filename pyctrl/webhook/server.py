"""The HTTPS admission webhook server: handlers by path, bounded in time, threads and size.

Contract:

* :class:`WebhookServer` serves ``POST <path>`` for every registered
  :data:`~pyctrl.webhook.admission.Handler` (AdmissionReview in, AdmissionReview out) and
  ``GET /healthz`` / ``GET /readyz``. It is a Manager runnable: ``run(stop)`` starts, serves
  until ``stop`` is set and shuts down. :meth:`start` loads the certificate and binds
  synchronously, so a missing certificate directory raises :class:`CertificateError` (naming
  the path) and a busy port raises ``OSError`` to the caller instead of killing a thread.
* Certificates come from :class:`~pyctrl.webhook.certwatcher.CertWatcher` on
  ``cert_dir/cert_name`` and ``cert_dir/key_name``: polled every ``cert_poll_seconds`` of the
  injected Clock; each TLS handshake uses the newest valid pair.
* Bounds (every one configurable; defaults in :class:`WebhookServerConfig`):
  - one total deadline per connection, ``request_timeout_seconds``, for the TLS handshake,
    the request line, headers and body together: each socket read gets only the time left,
    so a client trickling one byte at a time is cut off at the deadline (the API server's
    own webhook timeout is at most 30 s, 10 s by default);
  - at most ``max_connections`` connections are served at once (one thread each); a
    connection above the cap is accepted and closed at once, so threads never exceed the
    cap and the client learns promptly;
  - headers above ``max_header_bytes`` are answered 431, bodies above ``max_body_bytes``
    413 (after reading a bounded amount, so the client sees the answer instead of a reset);
  - the listen backlog is ``backlog`` (128), so a burst of connections is queued by the
    kernel instead of having SYNs dropped and retried a second later;
  - :meth:`shutdown` closes the listening socket and shuts down every client socket, so
    connection threads return at once whatever clients do; it waits at most
    ``shutdown_timeout_seconds`` for them and is idempotent.
* Every response closes the connection (``Connection: close``), so no idle keep-alive
  connection holds a thread or delays shutdown.

Deadlines are real time: sockets time out on the kernel's clock, so they use
:class:`~pyctrl.clock.RealClock` whatever Clock drives the certificate polling. Socket
reading, HTTP parsing and the lingering close live in :mod:`pyctrl.webhook.connection`.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import orjson
import structlog

from pyctrl.clock import Clock, RealClock
from pyctrl.webhook.admission import Handler, ReviewError, handle_review
from pyctrl.webhook.certwatcher import CertificateError, CertWatcher
from pyctrl.webhook.connection import (
    Connection,
    Deadline,
    Reply,
    RequestHead,
    read_head,
    response,
    text,
)

__all__ = ["CertificateError", "WebhookServer", "WebhookServerConfig"]

log = structlog.get_logger(__name__)

_REAL = RealClock()
_MIB = 1024 * 1024
_REFUSAL_LOG_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class WebhookServerConfig:
    """Where and how to serve (see the module docstring for each bound).

    ``port=0`` picks a free port (see :attr:`WebhookServer.port`). ``max_body_bytes``
    defaults to 7 MiB: an UPDATE review carries the object and the old object, each up to
    the API server's 3 MiB request limit, plus the envelope.
    """

    cert_dir: str
    cert_name: str = "tls.crt"
    key_name: str = "tls.key"
    host: str = "0.0.0.0"
    port: int = 9443
    request_timeout_seconds: float = 10.0
    max_body_bytes: int = 7 * _MIB
    max_header_bytes: int = 64 * 1024
    max_connections: int = 64
    backlog: int = 128
    cert_poll_seconds: float = 1.0
    shutdown_timeout_seconds: float = 3.0

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {self.port}")
        for name in ("request_timeout_seconds", "cert_poll_seconds",
                     "shutdown_timeout_seconds"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        for name in ("max_body_bytes", "max_header_bytes", "max_connections", "backlog"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")

    @property
    def cert_file(self) -> Path:
        return Path(self.cert_dir) / self.cert_name

    @property
    def key_file(self) -> Path:
        return Path(self.cert_dir) / self.key_name


class WebhookServer:
    """The HTTPS admission server (see module docstring)."""

    def __init__(self, config: WebhookServerConfig,
                 handlers: Mapping[str, Handler] | None = None, *,
                 clock: Clock | None = None) -> None:
        self.config = config
        self.certs = CertWatcher(config.cert_file, config.key_file, clock=clock,
                                 interval=config.cert_poll_seconds)
        self._handlers: dict[str, Handler] = {}
        for path, handler in (handlers or {}).items():
            self.register(path, handler)
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._port: int | None = None
        self._wake: tuple[socket.socket, socket.socket] | None = None
        self._threads: list[threading.Thread] = []  # accept loop and cert watcher
        self._conns: dict[threading.Thread, Connection] = {}
        self._closing = threading.Event()
        self._started = False
        self._served = 0
        self.refused = 0  # connections closed at once because of max_connections
        self._next_refusal_log = 0.0
        self.ready = threading.Event()  # set while listening with a loaded certificate

    # -- wiring -------------------------------------------------------------------------
    def register(self, path: str, handler: Handler) -> None:
        """Serve ``handler`` at ``POST path``; register before :meth:`start`."""
        if not path.startswith("/") or path in ("/healthz", "/readyz"):
            raise ValueError(f"invalid webhook path {path!r}")
        if path in self._handlers:
            raise ValueError(f"a handler is already registered at {path!r}")
        self._handlers[path] = handler

    @property
    def port(self) -> int:
        """The bound port (useful with ``port=0``); only valid after :meth:`start`."""
        if self._port is None:
            raise RuntimeError("the webhook server is not started")
        return self._port

    def check(self) -> str | None:
        """A readiness check: None once listening with a loaded certificate."""
        if self.ready.is_set() and self.certs.loaded:
            return None
        return "webhook server is not listening"

    def active_connections(self) -> int:
        with self._lock:
            return len(self._conns)

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        """Load the certificate, bind, and start the accept loop and the cert watcher."""
        with self._lock:
            if self._started:
                raise RuntimeError("the webhook server is already started")
            self._started = True
        try:
            if not self.certs.loaded:
                self.certs.load()  # CertificateError names the path
            family = socket.AF_INET6 if ":" in self.config.host else socket.AF_INET
            listener = socket.create_server((self.config.host, self.config.port),
                                            family=family, backlog=self.config.backlog)
        except BaseException:
            with self._lock:
                self._started = False
            raise
        listener.setblocking(False)
        self._listener = listener
        self._port = int(listener.getsockname()[1])
        self._wake = socket.socketpair()
        self._threads = [
            threading.Thread(target=self._accept_loop, name="webhook-accept", daemon=True),
            threading.Thread(target=self.certs.run, args=(self._closing,),
                             name="webhook-certwatcher", daemon=True),
        ]
        for t in self._threads:
            t.start()
        self.ready.set()
        log.info("webhook server listening", host=self.config.host, port=self.port,
                 paths=sorted(self._handlers))

    def run(self, stop: threading.Event) -> None:
        """Serve until ``stop`` is set, then shut down (a Manager runnable)."""
        self.start()
        try:
            stop.wait()
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        """Stop accepting, cut off every client and join the threads (bounded, idempotent)."""
        with self._lock:
            if not self._started or self._closing.is_set():
                return
            self._closing.set()
            conns = dict(self._conns)
        self.ready.clear()
        if self._wake is not None:
            with contextlib.suppress(OSError):
                self._wake[1].send(b"x")
        for conn in conns.values():
            conn.abort()
        deadline = _REAL.monotonic() + self.config.shutdown_timeout_seconds
        for t in [*self._threads, *conns]:
            t.join(max(0.0, deadline - _REAL.monotonic()))
        stuck = [t.name for t in [*self._threads, *conns] if t.is_alive()]
        if stuck:
            log.error("webhook threads still running after shutdown timeout", threads=stuck)
        for sock in (self._listener, *(self._wake or ())):
            if sock is not None:
                sock.close()
        log.info("webhook server stopped")

    # -- accepting ----------------------------------------------------------------------
    def _accept_loop(self) -> None:
        listener, wake = self._listener, self._wake
        assert listener is not None and wake is not None
        with selectors.DefaultSelector() as selector:
            selector.register(listener, selectors.EVENT_READ)
            selector.register(wake[0], selectors.EVENT_READ)
            while not self._closing.is_set():
                for key, _ in selector.select():
                    if key.fileobj is wake[0]:
                        return
                    try:
                        sock, address = listener.accept()
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError as err:  # EMFILE and friends: log, keep serving
                        log.error("webhook accept failed", error=str(err))
                        self._closing.wait(0.1)
                        continue
                    self._admit(sock, address)

    def _admit(self, sock: socket.socket, address: tuple[str, int]) -> None:
        conn = Connection(sock, self.config.request_timeout_seconds)
        with self._lock:
            refuse = self._closing.is_set() or len(self._conns) >= self.config.max_connections
            if not refuse:
                self._served += 1
                thread = threading.Thread(target=self._serve, args=(conn, address),
                                          name=f"webhook-conn-{self._served}", daemon=True)
                self._conns[thread] = conn
                # Started under the lock: shutdown() never sees (and joins) an unstarted
                # thread. start() only waits for the thread to exist, not for the lock.
                try:
                    thread.start()
                except RuntimeError:  # no more threads: treat like the cap
                    del self._conns[thread]
                    refuse = True
            if refuse:
                self.refused += 1
        if refuse:
            sock.close()
            now = _REAL.monotonic()
            if now >= self._next_refusal_log:  # at most one line per interval under a flood
                self._next_refusal_log = now + _REFUSAL_LOG_SECONDS
                log.warning("webhook connections refused: too many connections",
                            limit=self.config.max_connections, refused_total=self.refused,
                            client=address[0])

    # -- one connection -----------------------------------------------------------------
    def _serve(self, conn: Connection, address: tuple[str, int]) -> None:
        try:
            self._exchange(conn)
        except Deadline:
            log.info("webhook request deadline exceeded; closing", client=address[0],
                     timeout=self.config.request_timeout_seconds)
        except (OSError, ValueError) as err:  # resets, failed handshakes, shutdown
            log.debug("webhook connection ended", client=address[0], error=str(err))
        finally:
            conn.sock.close()
            with self._lock:
                self._conns.pop(threading.current_thread(), None)

    def _exchange(self, conn: Connection) -> None:
        raw = conn.sock
        raw.settimeout(conn.remaining())
        tls = self.certs.context().wrap_socket(raw, server_side=True,
                                               do_handshake_on_connect=False)
        conn.sock = tls
        if self._closing.is_set():  # shutdown may have missed the socket while it changed
            return
        tls.settimeout(conn.remaining())
        try:
            tls.do_handshake()
        except TimeoutError as err:
            raise Deadline() from err
        reply = self._read_and_handle(conn)
        if reply is None:
            return
        # Writing gets its own deadline: the reading one may be nearly spent by a slow
        # client whose request is nevertheless complete.
        tls.settimeout(self.config.request_timeout_seconds)
        tls.sendall(response(reply))
        if reply[0] >= 400:
            conn.linger()

    def _read_and_handle(self, conn: Connection) -> Reply | None:
        head = read_head(conn, self.config.max_header_bytes)
        if not isinstance(head, RequestHead):
            return head
        if "transfer-encoding" in head.headers:
            return text(411, "Content-Length required")
        try:
            default = "0" if head.method == "GET" else ""
            length = int(head.headers.get("content-length", default))
        except ValueError:
            return text(411, "Content-Length required")
        if length < 0:
            return text(400, "bad Content-Length")
        handler = self._handlers.get(head.path) if head.method == "POST" else None
        limit = self.config.max_body_bytes
        if handler is None or length > limit:
            # Read what the client sent (bounded, within the deadline) before answering:
            # closing a socket with unread input resets the connection and the client
            # would never see the answer.
            conn.drain(min(length, 4 * limit) - len(head.rest))
            if head.method == "GET" and head.path in ("/healthz", "/readyz"):
                return text(200, "ok")
            if head.method not in ("GET", "POST"):
                return text(405, "method not allowed")
            if handler is None:
                return text(404, "not found")
            return text(413, "request body too large")
        body = bytearray(head.rest)
        while len(body) < length:
            chunk = conn.recv(min(length - len(body), 256 * 1024))
            if not chunk:
                return None
            body += chunk
        return self._handle(head.path, handler, bytes(body[:length]))

    @staticmethod
    def _handle(path: str, handler: Handler, body: bytes) -> Reply:
        try:
            review = orjson.loads(body)
            if not isinstance(review, dict):
                raise ReviewError("the body is not a JSON object")
            answer = orjson.dumps(handle_review(handler, cast(dict[str, object], review)))
        except (orjson.JSONDecodeError, ReviewError) as err:
            log.info("bad admission request", path=path, error=str(err))
            return text(400, str(err))
        except Exception:
            log.exception("admission handler failed", path=path)
            return text(500, "internal error")
        return 200, answer, "application/json"
