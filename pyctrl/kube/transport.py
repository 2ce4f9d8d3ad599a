"""A lean HTTP/1.1 transport for the REST client's unary (non-watch) requests.

Contract:

* One keep-alive connection per thread (thread-local) and per transport. Connections are
  opened by urllib3's own ``HTTPConnection`` / ``HTTPSConnection`` with the keyword arguments
  the REST client's urllib3 pool gives its connections, so TCP options, TLS, CA, client
  certificate and hostname verification are exactly urllib3's; an unverified HTTPS connection
  warns :class:`urllib3.exceptions.InsecureRequestWarning` as the pool does. Only the exchange
  on the established socket is done here: the whole request goes out in one ``sendall`` and
  the answer is parsed from a buffered reader by :func:`pyctrl.kube.response.read_response`
  (``Accept-Encoding: identity`` is sent, as urllib3 does).
* Reuse: before a request is sent on a connection that already served one, a zero-timeout
  poll checks that the server has not closed it meanwhile (idle timeout, restart); if it has,
  a new connection is opened first, with nothing sent on the old one. If a request still fails
  on a reused connection because the peer is gone before any byte of an answer arrived, it is
  sent once more on a new connection only when that is safe: when it could not be written
  completely (a server never acts on part of a request), and, for GET/HEAD/OPTIONS, also when
  it was. A completely written POST/PUT/PATCH/DELETE is never sent again (the server may have
  processed it): the error is raised. Nothing is resent after a timeout, after any byte of an
  answer, or on a connection opened for this request.
* Connecting is retried twice on connection errors (refused, connect timeout, name
  resolution), like the pool's ``Retry(connect=2)``; TLS failures are not retried.
* Errors are the exceptions urllib3 raises: timeouts are ``TimeoutError`` or urllib3's
  ``ConnectTimeoutError``; other failures an ``OSError`` (``ConnectionError``, ``ssl.SSLError``)
  or a urllib3 ``HTTPError`` (``NewConnectionError``, ``SSLError``, ``ProtocolError`` for a
  malformed or truncated answer, ``DecodeError``). A connection that saw an error is closed.
* Timeouts: ``connect_timeout`` bounds the TCP connect and the TLS handshake,
  ``read_timeout`` each later send or receive on the socket (per operation, as in urllib3).
* ``guard`` (optional, per request) is called right before every send of the request bytes,
  after any (re)connect; if it raises, nothing is sent and its exception propagates.
* :meth:`UnaryTransport.close` may be called from any thread: idle connections are closed at
  once, a connection in use is closed by its thread when its request ends (a request in
  flight completes, as with the pool); later requests raise :class:`TransportClosed`.
"""

from __future__ import annotations

import select
import threading
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import ConnectTimeoutError, InsecureRequestWarning, SSLError
from urllib3.util import parse_url
from urllib3.util.ssl_match_hostname import CertificateError

from pyctrl.kube.response import PEER_GONE, NoAnswer, Response, read_response

__all__ = ["Response", "TransportClosed", "UnaryTransport"]

_READ_BUFFER = 32 * 1024
_CONNECT_RETRIES = 2
# Methods resent after a complete write when the reused connection died before any answer.
_RESENDABLE = frozenset({"GET", "HEAD", "OPTIONS"})
# Methods that always carry a Content-Length (urllib3 sends "Content-Length: 0" without body).
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# urllib3's HTTPConnection (plain http) takes none of these; the pool drops them for http too.
_TLS_KEYWORDS = frozenset({
    "key_file", "cert_file", "cert_reqs", "ca_certs", "ca_cert_dir", "ca_cert_data",
    "ssl_version", "ssl_minimum_version", "ssl_maximum_version", "ssl_context",
    "key_password", "assert_hostname", "assert_fingerprint", "server_hostname",
})


class TransportClosed(Exception):
    """The transport is closed; the request was not sent."""


class _Connection:
    __slots__ = ("__weakref__", "poller", "reader", "sock", "used")

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.reader: BinaryIO = sock.makefile("rb", buffering=_READ_BUFFER)
        self.poller = select.poll()
        self.poller.register(sock, select.POLLIN)
        self.used = False  # has served a complete answer: a reused connection

    def dropped(self) -> bool:
        """Readable while idle: the server closed it (EOF/reset) or sent stray bytes."""
        return bool(self.poller.poll(0))

    def close(self) -> None:
        sock, self.sock = self.sock, None
        if sock is None:
            return
        try:
            self.reader.close()  # the socket stays open while its reader holds it
        finally:
            sock.close()

    def __del__(self) -> None:
        self.close()


class _Slot:
    """One thread's connection; ``busy`` while that thread is inside a request."""

    __slots__ = ("__weakref__", "busy", "conn")

    def __init__(self) -> None:
        self.busy = False
        self.conn: _Connection | None = None

    def drop(self, conn: _Connection) -> None:
        """Forget ``conn``, this slot's connection, and close it.

        Only the slot's own thread calls this, inside a request (``busy``): ``close()`` leaves
        a busy slot alone, so no lock is needed.
        """
        self.conn = None
        conn.close()


class _Local(threading.local):
    slot: _Slot | None = None


class UnaryTransport:
    """Thread-local keep-alive connections to one server (see the module docstring).

    ``url`` is the server URL (``http`` or ``https``; a path in it is not used: callers pass
    complete request targets). ``connection_kw`` are extra keyword arguments for urllib3's
    connection class (``cert_reqs``, ``ca_certs``, ``cert_file``, ``server_hostname``...).
    """

    def __init__(self, url: str, *, connection_kw: Mapping[str, Any] | None = None,
                 connect_timeout: float = 30.0, read_timeout: float = 30.0) -> None:
        parsed = parse_url(url)
        scheme = (parsed.scheme or "http").lower()
        if scheme not in ("http", "https"):
            raise ValueError(f"unsupported URL scheme {scheme!r} in {url!r}")
        host = (parsed.host or "").strip("[]")
        if not host:
            raise ValueError(f"no host in {url!r}")
        default_port = 443 if scheme == "https" else 80
        self.host = host
        self.port = parsed.port or default_port
        bracketed = f"[{host}]" if ":" in host else host
        netloc = bracketed if self.port == default_port else f"{bracketed}:{self.port}"
        self._https = scheme == "https"
        self._conn_cls: type[HTTPConnection] = HTTPSConnection if self._https else HTTPConnection
        self._conn_kw = {k: v for k, v in (connection_kw or {}).items()
                         if self._https or k not in _TLS_KEYWORDS}
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        # Sent after the request line, as http.client does for urllib3.
        self._host_lines = f"Host: {netloc}\r\nAccept-Encoding: identity\r\n"
        self._local = _Local()
        self._lock = threading.Lock()
        self._slots: weakref.WeakSet[_Slot] = weakref.WeakSet()
        self._closed = False
        self.connections_opened = 0  # connections this transport has established

    # -- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Close idle connections now and in-use ones when their request ends; refuse more."""
        with self._lock:
            self._closed = True
            idle: list[_Connection] = []
            for slot in list(self._slots):
                if not slot.busy and slot.conn is not None:
                    idle.append(slot.conn)
                    slot.conn = None
        for conn in idle:
            conn.close()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- requests -----------------------------------------------------------------------
    def request(self, method: str, target: str, headers: str, body: bytes | None = None,
                guard: Callable[[], None] | None = None) -> Response:
        """Send one request and read its whole answer.

        ``target`` is the request target (path and query, already percent-encoded);
        ``headers`` are extra header lines, each ending in ``\\r\\n`` (Host,
        Accept-Encoding and Content-Length are added here).
        """
        if body is not None:
            head = (f"{method} {target} HTTP/1.1\r\n{self._host_lines}{headers}"
                    f"Content-Length: {len(body)}\r\n\r\n")
            data = head.encode("latin-1") + body
        elif method in _BODY_METHODS:
            data = (f"{method} {target} HTTP/1.1\r\n{self._host_lines}{headers}"
                    "Content-Length: 0\r\n\r\n").encode("latin-1")
        else:
            data = f"{method} {target} HTTP/1.1\r\n{self._host_lines}{headers}\r\n".encode(
                "latin-1")
        slot = self._local.slot
        if slot is None:
            slot = self._local.slot = _Slot()
            with self._lock:
                self._slots.add(slot)
        with self._lock:
            if self._closed:
                raise TransportClosed("the transport is closed")
            slot.busy = True
        try:
            return self._exchange(slot, method, data, guard)
        finally:
            with self._lock:
                slot.busy = False
                leftover = slot.conn if self._closed else None
                if leftover is not None:
                    slot.conn = None
            if leftover is not None:
                leftover.close()

    def _exchange(self, slot: _Slot, method: str, data: bytes,
                  guard: Callable[[], None] | None) -> Response:
        conn = slot.conn
        if conn is not None and conn.dropped():
            slot.drop(conn)
            conn = None
        resent = False
        while True:
            if conn is None:
                conn = slot.conn = self._connect()
            reused = conn.used
            if guard is not None:
                guard()
            try:
                conn.sock.sendall(data)
            except PEER_GONE:
                slot.drop(conn)
                conn = None
                if reused and not resent:  # not completely written: never processed
                    resent = True
                    continue
                raise
            except BaseException:
                slot.drop(conn)
                raise
            try:
                response, keep_alive = read_response(conn.reader, method)
            except NoAnswer:
                slot.drop(conn)
                conn = None
                if reused and not resent and method in _RESENDABLE:
                    resent = True
                    continue
                raise
            except BaseException:
                slot.drop(conn)
                raise
            if keep_alive:
                conn.used = True
            else:
                slot.drop(conn)
            return response

    def _connect(self) -> _Connection:
        attempt = 0
        while True:
            http_conn = self._conn_cls(self.host, self.port, timeout=self._connect_timeout,
                                       **self._conn_kw)
            try:
                http_conn.connect()
            except ConnectTimeoutError:  # NewConnectionError and NameResolutionError too
                http_conn.close()
                if attempt < _CONNECT_RETRIES:
                    attempt += 1
                    continue
                raise
            except CertificateError as exc:  # urllib3's own hostname check: not an OSError
                http_conn.close()
                raise SSLError(exc) from exc
            except BaseException:
                http_conn.close()
                raise
            sock = http_conn.sock
            http_conn.sock = None  # the socket is ours now
            with self._lock:
                self.connections_opened += 1
            if self._https and not http_conn.is_verified:
                warnings.warn(
                    f"Unverified HTTPS request is being made to host '{self.host}'. "
                    "Adding certificate verification is strongly advised. See: "
                    "https://urllib3.readthedocs.io/en/latest/advanced-usage.html"
                    "#tls-warnings",
                    InsecureRequestWarning,
                    stacklevel=2,
                )
            try:
                sock.settimeout(self._read_timeout)
                return _Connection(sock)
            except BaseException:
                sock.close()
                raise
