"""The HTTPS admission webhook server: handlers by path, bounded in time, connections and size.

Contract:

* :class:`WebhookServer` serves ``POST <path>`` for every registered
  :data:`~pyctrl.webhook.admission.Handler` (AdmissionReview in, AdmissionReview out;
  a :class:`~pyctrl.webhook.admission.ReviewHandler` answers other reviews, e.g. conversion) and
  ``GET /healthz`` / ``GET /readyz``. It is a Manager runnable: ``run(stop)`` starts, serves
  until ``stop`` is set and shuts down. :meth:`start` loads the certificate and binds
  synchronously, so a missing certificate directory raises :class:`CertificateError` (naming
  the path) and a busy port raises ``OSError`` to the caller instead of killing a thread.
* Certificates come from :class:`~pyctrl.webhook.certwatcher.CertWatcher` on
  ``cert_dir/cert_name`` and ``cert_dir/key_name``: polled every ``cert_poll_seconds`` of the
  injected Clock; each TLS handshake uses the newest valid pair.
* Connections are served by a :class:`~pyctrl.frontend.Frontend`: one event-loop thread
  accepts, TLS-handshakes and reads them all; only a complete AdmissionReview reaches one of
  ``workers`` threads. Idle and slow clients cost no thread, so they can not starve the API
  server's calls. Bounds (every one configurable; defaults in :class:`WebhookServerOptions`):
  - the TLS handshake and the request head must arrive within ``header_timeout_seconds`` of
    the accept (Go's ReadHeaderTimeout), the whole request within
    ``request_timeout_seconds`` (the API server's own webhook timeout is at most 30 s, 10 s
    by default); a client trickling bytes is cut off at the deadline;
  - at most ``max_connections`` connections are open at once and
    ``max_connections_per_peer`` from one address; a connection above a cap is accepted and
    closed at once, so the client learns promptly;
  - headers above ``max_header_bytes`` are answered 431, bodies above ``max_body_bytes``
    413 (after reading a bounded amount, so the client sees the answer instead of a reset);
  - the listen backlog is ``backlog`` (1024; the kernel caps it at net.core.somaxconn), so
    a burst of connections (clients that a deadline cut off all reconnecting at once) is
    queued by the kernel instead of having SYNs dropped and retried a second later;
  - :meth:`shutdown` closes the listening socket and, at once, every connection without a
    complete review (idle, or a client still sending one), lets the reviews under way
    finish (answered with ``Connection: close``) for at most ``shutdown_timeout_seconds``,
    then cuts off the rest; it is idempotent.
* Keep-alive: the API server's HTTP client (Go's) reuses connections, so a connection
  stays open after a successful answer unless the request said ``Connection: close``
  (HTTP/1.0: unless it said ``Connection: keep-alive``), saving a TLS handshake per review.
  A kept connection waits at most ``idle_timeout_seconds`` (120 s, past the 90 s after
  which the API server's client closes it itself) for its next request and serves at most
  ``max_requests_per_connection``; error answers close. Near ``max_connections`` no
  connection is kept, and a new client above a cap takes the slot of the connection whose
  request head has been incomplete longest (counted in :attr:`evicted`), else of the
  longest idle kept connection, so neither idle nor slow connections, from any address,
  keep out a client that sends its review promptly (see :mod:`pyctrl.frontend.server`).

* Handlers run with the time left to answer (:func:`pyctrl.webhook.deadline.remaining`):
  from the moment the review was read, the shorter of the API server's ``?timeout=`` and
  the path's ``Admission.timeout_seconds``, less a margin for writing the answer.

* The log stays small under a flood, as under an outage (:mod:`pyctrl._errorlog`, by the
  injected Clock): a bad review (400) is ``bad admission request``, one line per path per
  10 s counting the rest in ``suppressed``; a handler that raises (500) is ``admission
  handler failed``, its traceback at most once a minute per raise location.

Deadlines are real time (they bound sockets), whatever Clock drives the certificate polling.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast
from urllib.parse import parse_qs

import orjson
import structlog

from pyctrl._errorlog import ErrorLog
from pyctrl.clock import Clock
from pyctrl.duration import parse_duration
from pyctrl.frontend import Frontend, FrontendOptions, Reply, Request, RequestHead, text
from pyctrl.frontend import Handler as HTTPHandler
from pyctrl.webhook.admission import ReviewError, ServedHandler, handle_review
from pyctrl.webhook.certwatcher import CertificateError, CertWatcher
from pyctrl.webhook.configuration import Admission
from pyctrl.webhook.deadline import ANSWER_MARGIN, review_deadline

__all__ = ["CertificateError", "WebhookServer", "WebhookServerOptions"]

log = structlog.get_logger(__name__)

_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class WebhookServerOptions:
    """Where and how to serve (see the module docstring for each bound).

    ``port=0`` picks a free port (see :attr:`WebhookServer.port`). ``max_body_bytes``
    defaults to 7 MiB: an UPDATE review carries the object and the old object, each up to
    the API server's 3 MiB request limit, plus the envelope. ``max_connections`` (4096) and
    ``max_connections_per_peer`` (512) bound memory, not threads: an open connection costs a
    few KiB on the event loop (the process needs an open-file limit above the cap).
    """

    cert_dir: str
    cert_name: str = "tls.crt"
    key_name: str = "tls.key"
    host: str = "0.0.0.0"
    port: int = 9443
    header_timeout_seconds: float = 5.0
    request_timeout_seconds: float = 10.0
    max_body_bytes: int = 7 * _MIB
    max_header_bytes: int = 64 * 1024
    max_connections: int = 4096
    max_connections_per_peer: int = 512
    workers: int = 16  # reviews wait on I/O (a dry run): docs/DESIGN.md, "deadlines"
    backlog: int = 1024
    cert_poll_seconds: float = 1.0
    shutdown_timeout_seconds: float = 3.0
    idle_timeout_seconds: float = 120.0  # 0: every answer closes its connection
    max_requests_per_connection: int = 1000

    def __post_init__(self) -> None:
        if self.cert_poll_seconds <= 0:
            raise ValueError("cert_poll_seconds must be positive")
        self.frontend()  # validates the rest

    def frontend(self) -> FrontendOptions:
        """The connection bounds, for :class:`~pyctrl.frontend.Frontend`."""
        return FrontendOptions(
            host=self.host, port=self.port, backlog=self.backlog,
            max_connections=self.max_connections,
            max_connections_per_peer=self.max_connections_per_peer,
            header_timeout_seconds=self.header_timeout_seconds,
            request_timeout_seconds=self.request_timeout_seconds,
            max_header_bytes=self.max_header_bytes, max_body_bytes=self.max_body_bytes,
            workers=self.workers, shutdown_timeout_seconds=self.shutdown_timeout_seconds,
            idle_timeout_seconds=self.idle_timeout_seconds,
            max_requests_per_connection=self.max_requests_per_connection)

    @property
    def cert_file(self) -> Path:
        return Path(self.cert_dir) / self.cert_name

    @property
    def key_file(self) -> Path:
        return Path(self.cert_dir) / self.key_name


class WebhookServer:
    """The HTTPS admission server (see module docstring)."""

    def __init__(self, config: WebhookServerOptions,
                 handlers: Mapping[str, ServedHandler] | None = None, *,
                 clock: Clock | None = None,
                 admission: Mapping[str, Admission] | None = None) -> None:
        self.config = config
        self.certs = CertWatcher(config.cert_file, config.key_file, clock=clock,
                                 interval=config.cert_poll_seconds)
        self._handlers: dict[str, ServedHandler] = {}
        self._admission: dict[str, Admission] = {}
        for path, handler in (handlers or {}).items():
            self.register(path, handler, admission=(admission or {}).get(path))
        self._lock = threading.Lock()
        self._frontend: Frontend | None = None
        self._watcher: threading.Thread | None = None
        self._closing = threading.Event()
        self._started = False
        self.ready = threading.Event()  # set while listening with a loaded certificate
        self._errors = ErrorLog(log, clock, burst=1)  # a flood of bad reviews: a few lines

    # -- wiring -------------------------------------------------------------------------
    def register(self, path: str, handler: ServedHandler, *,
                 admission: Admission | None = None) -> None:
        """Serve ``handler`` at ``POST path``; register before :meth:`start`. ``admission``
        says how the API server calls it (``python -m pyctrl gen webhook`` reads it)."""
        if not path.startswith("/") or path in ("/healthz", "/readyz"):
            raise ValueError(f"invalid webhook path {path!r}")
        if path in self._handlers:
            raise ValueError(f"a handler is already registered at {path!r}")
        self._handlers[path] = handler
        if admission is not None:
            self._admission[path] = admission

    @property
    def admission(self) -> dict[str, Admission]:
        """The handlers registered with an :class:`Admission`, by path."""
        return dict(self._admission)

    @property
    def port(self) -> int:
        """The bound port (useful with ``port=0``); only valid after :meth:`start`."""
        if self._frontend is None:
            raise RuntimeError("the webhook server is not started")
        return self._frontend.address[1]

    @property
    def accepted(self) -> int:
        """Connections admitted since the start (with keep-alive, fewer than requests)."""
        return self._frontend.accepted if self._frontend is not None else 0

    @property
    def refused(self) -> int:
        """Connections closed at once because of ``max_connections`` or the per-peer cap."""
        return self._frontend.refused if self._frontend is not None else 0

    @property
    def evicted(self) -> int:
        """Connections without a complete request head cut off to make room at a cap."""
        return self._frontend.evicted if self._frontend is not None else 0

    def check(self) -> str | None:
        """A readiness check: None once listening with a loaded certificate."""
        if self.ready.is_set() and self.certs.loaded:
            return None
        return "webhook server is not listening"

    def active_connections(self) -> int:
        return self._frontend.active_connections() if self._frontend is not None else 0

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        """Load the certificate, bind, and start serving and the cert watcher."""
        with self._lock:
            if self._started:
                raise RuntimeError("the webhook server is already started")
            self._started = True
        frontend = Frontend("webhook", self.config.frontend(), self._route,
                            context=self.certs.context)
        try:
            if not self.certs.loaded:
                self.certs.load()  # CertificateError names the path
            frontend.start()
        except BaseException:
            with self._lock:
                self._started = False
            raise
        self._frontend = frontend
        self._watcher = threading.Thread(target=self.certs.run, args=(self._closing,),
                                         name="webhook-certwatcher", daemon=True)
        self._watcher.start()
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
        """Stop accepting, close idle clients, let reviews under way finish, join the threads
        (bounded, idempotent)."""
        with self._lock:
            if not self._started or self._closing.is_set():
                return
            self._closing.set()
        self.ready.clear()
        if self._frontend is not None:
            self._frontend.shutdown()
        if self._watcher is not None:
            self._watcher.join(self.config.shutdown_timeout_seconds)
        log.info("webhook server stopped")

    # -- requests -----------------------------------------------------------------------
    def _route(self, head: RequestHead) -> HTTPHandler | Reply:
        """On the event loop: the handler for a review, or the answer to anything else."""
        if head.method == "GET" and head.path in ("/healthz", "/readyz"):
            return text(200, "ok")
        if head.method not in ("GET", "POST"):
            return text(405, "method not allowed")
        handler = self._handlers.get(head.path) if head.method == "POST" else None
        if handler is None:
            return text(404, "not found")
        return lambda request: self._handle(request, handler)

    def _deadline(self, request: Request) -> float | None:
        """When the answer to ``request`` must be written (:mod:`pyctrl.webhook.deadline`)."""
        timeouts: list[float] = []
        for value in parse_qs(request.head.query).get("timeout", [])[:1]:
            with contextlib.suppress(ValueError):
                timeouts.append(parse_duration(value))
        admission = self._admission.get(request.path)
        if admission is not None:
            timeouts.append(float(admission.timeout_seconds))
        if not timeouts or not request.received:
            return None
        return request.received + min(timeouts) - ANSWER_MARGIN

    def _handle(self, request: Request, handler: ServedHandler) -> Reply:
        path, body = request.path, request.body
        try:
            review = orjson.loads(body)
            if not isinstance(review, dict):
                raise ReviewError("the body is not a JSON object")
            with review_deadline(self._deadline(request)):
                answer = orjson.dumps(handle_review(handler, cast(dict[str, object], review)))
        except (orjson.JSONDecodeError, ReviewError) as err:
            self._errors.event("bad admission request", key=path, path=path, error=str(err))
            return text(400, str(err))
        except Exception as err:
            self._errors.failure("admission handler failed", err, path=path)
            return text(500, "internal error")
        return 200, answer, "application/json"
