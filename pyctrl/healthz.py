"""Health/readiness checks and the small HTTP servers a Manager runs (probes and /metrics).

Contract:

* A check is ``fn() -> str | None``: None means healthy, a string is the failure reason; a
  check that raises is a failure with the exception as reason.
* :class:`Checks` answers like the Kubernetes API server's probe endpoints: ``/healthz`` (or
  ``/readyz``) returns 200 ``ok`` when every check passes, else 500 listing failures;
  ``?verbose`` lists every check as ``[+]name ok`` / ``[-]name failed: reason``;
  ``/<endpoint>/<name>`` runs one check (404 when unknown).
* :class:`HTTPServerThread` serves one handler on a stdlib ``ThreadingHTTPServer`` in a named
  thread; ``shutdown()`` stops serving, closes the socket and joins the serving thread and
  every request thread (none outlive it). Bind addresses are ``host:port`` (``:8080`` binds
  all interfaces; port 0 picks a free port, see ``address``); ``"0"`` means disabled.
* With an ``ssl_context`` the server speaks HTTPS only; the TLS handshake runs in the
  request's thread (a slow client never blocks the accept loop) under the same
  ``request_timeout`` as every read. With ``authorize`` (see :mod:`pyctrl.metrics_auth`),
  ``authorize(path, Authorization header)`` runs before the handler; a response it returns is
  sent instead of the handler's.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

__all__ = ["Authorizer", "Check", "Checks", "HTTPServerThread", "Response", "metrics_handler",
           "parse_bind_address"]

log = structlog.get_logger(__name__)

Check = Callable[[], str | None]
Response = tuple[int, str, bytes]  # status, content type, body
Handler = Callable[[str, dict[str, list[str]]], Response]
Authorizer = Callable[[str, str | None], Response | None]  # (path, Authorization) -> denial

_TEXT = "text/plain; charset=utf-8"


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``"host:port"`` -> (host, port); ``":port"`` binds all interfaces; "0"/"" -> None."""
    if address in ("", "0"):
        return None
    host, sep, port = address.rpartition(":")
    if not sep:
        raise ValueError(f"bind address {address!r} must look like host:port or :port")
    return host.strip("[]") or "0.0.0.0", int(port)


class Checks:
    """Named checks for one endpoint family (``healthz`` or ``readyz``)."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self._mu = threading.Lock()
        self._checks: dict[str, Check] = {}

    def add(self, name: str, fn: Check) -> None:
        with self._mu:
            if name in self._checks:
                raise ValueError(f"{self.endpoint} check {name!r} already registered")
            self._checks[name] = fn

    def names(self) -> list[str]:
        with self._mu:
            return list(self._checks)

    @staticmethod
    def _run(fn: Check) -> str | None:
        try:
            return fn()
        except Exception as err:
            return f"check raised {type(err).__name__}: {err}"

    def serve(self, path: str, query: dict[str, list[str]]) -> Response:
        """Answer ``/<endpoint>`` or ``/<endpoint>/<name>``."""
        with self._mu:
            checks = dict(self._checks)
        rest = path[len(self.endpoint) + 1:].strip("/")
        if rest:
            fn = checks.get(rest)
            if fn is None:
                return 404, _TEXT, f"no {self.endpoint} check named {rest!r}\n".encode()
            reason = self._run(fn)
            if reason is None:
                return 200, _TEXT, b"ok"
            return 500, _TEXT, f"[-]{rest} failed: {reason}\n".encode()
        lines: list[str] = []
        failed = False
        for name, fn in checks.items():
            reason = self._run(fn)
            if reason is None:
                lines.append(f"[+]{name} ok")
            else:
                failed = True
                lines.append(f"[-]{name} failed: {reason}")
        verbose = "verbose" in query
        if failed:
            lines.append(f"{self.endpoint} check failed")
            return 500, _TEXT, ("\n".join(lines) + "\n").encode()
        if verbose:
            lines.append(f"{self.endpoint} check passed")
            return 200, _TEXT, ("\n".join(lines) + "\n").encode()
        return 200, _TEXT, b"ok"


def metrics_handler(registry: CollectorRegistry) -> Handler:
    """Serve the Prometheus text exposition of ``registry`` at ``/metrics``."""

    def handle(path: str, query: dict[str, list[str]]) -> Response:
        if path.rstrip("/") != "/metrics":
            return 404, _TEXT, b"not found\n"
        return 200, CONTENT_TYPE_LATEST, generate_latest(registry)

    return handle


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # request threads are joined by server_close()
    block_on_close = True
    request_queue_size = 128  # the listen backlog (socketserver's default is 5)
    ssl_context: ssl.SSLContext | None = None

    def get_request(self) -> tuple[socket.socket, object]:
        conn, addr = super().get_request()
        if self.ssl_context is not None:
            # Handshake later, in the request thread (see _RequestHandler.setup).
            conn = self.ssl_context.wrap_socket(conn, server_side=True,
                                                do_handshake_on_connect=False)
        return conn, addr

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that fails the TLS handshake or hangs up is not the server's error.
        log.debug("http request failed", client=str(client_address), exc_info=True)


class HTTPServerThread:
    """One HTTP server in its own thread (see module docstring)."""

    def __init__(self, name: str, address: tuple[str, int], handler: Handler, *,
                 ssl_context: ssl.SSLContext | None = None,
                 authorize: Authorizer | None = None,
                 request_timeout: float = 10.0) -> None:
        self.name = name
        self.secure = ssl_context is not None

        class _RequestHandler(BaseHTTPRequestHandler):
            timeout = request_timeout

            def setup(self) -> None:
                if isinstance(self.request, ssl.SSLSocket):
                    self.request.settimeout(request_timeout)
                    self.request.do_handshake()
                super().setup()

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                try:
                    denied = (authorize(url.path, self.headers.get("Authorization"))
                              if authorize is not None else None)
                    status, ctype, body = denied or handler(
                        url.path, parse_qs(url.query, keep_blank_values=True))
                except Exception:
                    log.exception("http handler failed", server=name, path=url.path)
                    status, ctype, body = 500, _TEXT, b"internal error\n"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return  # access logs would drown the controller's own logs

        self._server = _Server(address, _RequestHandler)
        self._server.ssl_context = ssl_context
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.1},
                                        name=f"http-{name}", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._thread.start()
        log.info("serving", server=self.name, address=f"{self.address[0]}:{self.address[1]}",
                 scheme="https" if self.secure else "http")

    def shutdown(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()
