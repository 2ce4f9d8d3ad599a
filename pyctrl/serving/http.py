"""The small HTTP servers a Manager runs (health probes and /metrics), one thread each.

Contract:

* A :data:`Handler` answers ``(path, query) -> (status, content type, body)``.
* :class:`HTTPServerThread` serves one handler on a stdlib ``ThreadingHTTPServer`` in a named
  thread; ``shutdown()`` stops serving, closes the socket and joins the serving thread and
  every request thread (none outlive it). Bind addresses are ``host:port`` (``:8080`` binds
  all interfaces; port 0 picks a free port, see ``address``); ``"0"`` means disabled
  (:func:`parse_bind_address`).
* With an ``ssl_context`` the server speaks HTTPS only; the TLS handshake runs in the
  request's thread (a slow client never blocks the accept loop) under the same
  ``request_timeout`` as every read. With ``authorize`` (see :mod:`pyctrl.serving.auth`),
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

__all__ = [
    "TEXT",
    "Authorizer",
    "HTTPServerThread",
    "Handler",
    "Response",
    "parse_bind_address",
]

log = structlog.get_logger(__name__)

Response = tuple[int, str, bytes]  # status, content type, body
Handler = Callable[[str, dict[str, list[str]]], Response]
Authorizer = Callable[[str, str | None], Response | None]  # (path, Authorization) -> denial

TEXT = "text/plain; charset=utf-8"


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``"host:port"`` -> (host, port); ``":port"`` binds all interfaces; "0"/"" -> None."""
    if address in ("", "0"):
        return None
    host, sep, port = address.rpartition(":")
    if not sep:
        raise ValueError(f"bind address {address!r} must look like host:port or :port")
    return host.strip("[]") or "0.0.0.0", int(port)


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
                    status, ctype, body = 500, TEXT, b"internal error\n"
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
