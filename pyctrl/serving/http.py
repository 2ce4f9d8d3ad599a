"""The small HTTP servers a Manager runs (health probes and /metrics), on the event-loop front end.

Contract:

* A :data:`Handler` answers ``(path, query, headers) -> (status, content type, body[, extra
  header fields])``; ``headers`` are the request's, with lower-case names.
* :class:`HTTPServerThread` serves one handler on a :class:`pyctrl.frontend.Frontend`: one
  event-loop thread (``http-<name>-loop``) accepts and reads every connection and a few
  worker threads (``http-<name>-worker-<i>``) run the handler on complete requests, so
  idle or slow clients (a thousand connections that never send a byte) cost no thread and
  can not starve the kubelet's probes or a Prometheus scrape. Bounds: the TLS handshake and
  request head within ``min(5 s, request_timeout)`` of the accept, the whole request within
  ``request_timeout``, 4096 connections, 512 per client address, 64 KiB heads, 1 MiB bodies;
  keep-alive as the front end's defaults (a kept connection idles at most 120 s and serves
  at most 1000 requests; error answers close).
* The constructor binds (a busy port raises ``OSError`` there; ``address`` is valid at
  once); :meth:`~HTTPServerThread.start` serves; :meth:`~HTTPServerThread.shutdown` closes
  the listener and every idle connection at once, lets requests under way finish (bounded)
  and joins the threads (idempotent).
  Bind addresses are ``host:port`` (``:8080`` binds all interfaces; port 0 picks a free
  port); ``"0"`` means disabled (:func:`parse_bind_address`).
* Only GET is served (other methods 405). With an ``ssl_context`` the server speaks HTTPS
  only. With ``authorize`` (see :mod:`pyctrl.serving.auth`), ``authorize(path,
  Authorization header)`` runs on a worker before the handler; a response it returns is sent
  instead of the handler's. A handler (or ``authorize``) that raises is answered 500 and
  logged as ``http handler failed`` through :class:`pyctrl._errorlog.ErrorLog` (a
  traceback at most once a minute, one line per 10 s otherwise, counting the rest).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from urllib.parse import parse_qs

import structlog

from pyctrl._errorlog import ErrorLog
from pyctrl.frontend import Frontend, FrontendOptions, Headers, Reply, Request, RequestHead, text
from pyctrl.frontend import Handler as RequestHandler

__all__ = [
    "TEXT",
    "Authorizer",
    "HTTPServerThread",
    "Handler",
    "Response",
    "parse_bind_address",
]

log = structlog.get_logger(__name__)

# status, content type, body[, extra header fields]
Response = tuple[int, str, bytes] | tuple[int, str, bytes, Headers]
Handler = Callable[[str, dict[str, list[str]], Mapping[str, str]], Response]
Authorizer = Callable[[str, str | None], Response | None]  # (path, Authorization) -> denial

TEXT = "text/plain; charset=utf-8"
_HEADER_TIMEOUT = 5.0


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``"host:port"`` -> (host, port); ``":port"`` binds all interfaces; "0"/"" -> None."""
    if address in ("", "0"):
        return None
    host, sep, port = address.rpartition(":")
    if not sep:
        raise ValueError(f"bind address {address!r} must look like host:port or :port")
    return host.strip("[]") or "0.0.0.0", int(port)


class HTTPServerThread:
    """One HTTP(S) server on its own event loop (see module docstring)."""

    def __init__(self, name: str, address: tuple[str, int], handler: Handler, *,
                 ssl_context: ssl.SSLContext | None = None,
                 authorize: Authorizer | None = None,
                 request_timeout: float = 10.0) -> None:
        self.name = name
        self.secure = ssl_context is not None
        self._handler = handler
        self._authorize = authorize
        self._errors = ErrorLog(log, burst=1)  # a handler bug hit by every scrape
        config = FrontendOptions(host=address[0], port=address[1],
                                 header_timeout_seconds=min(_HEADER_TIMEOUT, request_timeout),
                                 request_timeout_seconds=request_timeout)
        context = (lambda: ssl_context) if ssl_context is not None else None
        self._frontend = Frontend(f"http-{name}", config, self._route, context=context)
        self._frontend.bind()

    @property
    def address(self) -> tuple[str, int]:
        return self._frontend.address

    def active_connections(self) -> int:
        """Connections open now (for tests and debugging)."""
        return self._frontend.active_connections()

    def start(self) -> None:
        self._frontend.start()
        log.info("serving", server=self.name, address=f"{self.address[0]}:{self.address[1]}",
                 scheme="https" if self.secure else "http")

    def shutdown(self) -> None:
        self._frontend.shutdown()

    def _route(self, head: RequestHead) -> RequestHandler | Reply:
        if head.method != "GET":
            return text(405, "method not allowed")
        return self._serve

    def _serve(self, request: Request) -> Reply:
        path = request.path
        try:
            denied = (self._authorize(path, request.head.headers.get("authorization"))
                      if self._authorize is not None else None)
            answer = denied or self._handler(
                path, parse_qs(request.head.query, keep_blank_values=True),
                request.head.headers)
        except Exception as err:
            self._errors.failure("http handler failed", err, server=self.name, path=path)
            return 500, b"internal error\n", TEXT
        return answer[0], answer[2], answer[1], answer[3] if len(answer) == 4 else ()
