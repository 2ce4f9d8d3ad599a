"""Senders: the two ways one request goes on the wire, with the same headers.

Contract (what :class:`pyctrl.kube.RESTClient`'s request loop hands one attempt to):

* :meth:`Senders.send` sends one :class:`Call` with the given ``Authorization`` value:
  through the lean transport (:class:`pyctrl.kube.transport.UnaryTransport`, one keep-alive
  connection per calling thread) unless the call streams (a watch), the client was built with
  ``transport="urllib3"`` or the server is reached through a proxy; otherwise through one
  keep-alive urllib3 pool shared by all threads (``pool_maxsize`` connections per host). The
  lean answer is read whole; a streaming pool answer is returned unread.
* Both send ``Accept`` (the call's), ``User-Agent``, ``Content-Type`` when the call has a
  body type, and ``Authorization`` when given (a value with CR or LF is refused:
  ValueError). A write (any method but GET, HEAD, OPTIONS) runs the write guard
  (:func:`pyctrl.kube.guard.check_write`) right before its bytes are sent.
* The pool retries connect errors only (twice: the request never reached the server), never
  reads, redirects or statuses; the lean transport's resend rules are its own.
* :meth:`Senders.close` closes both (idle pool sockets included); later sends fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import urllib3

from pyctrl.kube._kubeconfig import ConnectionSettings
from pyctrl.kube.guard import check_write
from pyctrl.kube.options import JSON
from pyctrl.kube.pool import build_pool, connection_kwargs, proxied
from pyctrl.kube.transport import Response, UnaryTransport

if TYPE_CHECKING:
    from kubernetes.client import Configuration

__all__ = ["Call", "Senders"]

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True, slots=True)
class Call:
    """One request as the loop sends (and resends) it."""

    method: str
    path: str  # the resource path and query, as from pyctrl.kube.paths.resource_path
    body: bytes | None
    content_type: str | None
    accept: str
    stream: bool = False
    timeout: urllib3.Timeout | None = None


class Senders:
    """The lean transport and the urllib3 pool of one client (module docstring)."""

    def __init__(self, cfg: ConnectionSettings | Configuration, host: str, *,
                 user_agent: str, timeout: float, pool_maxsize: int, lean: bool) -> None:
        self._host = host
        self._user_agent = user_agent
        self._timeout = urllib3.Timeout(connect=timeout, read=timeout)
        self.pool = build_pool(cfg, pool_maxsize)
        # Non-watch requests: the lean transport unless asked otherwise or proxied.
        self.lean: UnaryTransport | None = None
        if lean and not proxied(cfg):
            self.lean = UnaryTransport(host, connection_kw=connection_kwargs(cfg),
                                       connect_timeout=timeout, read_timeout=timeout)
        # The lean transport sends request targets: the server URL's own path prefix (if
        # any) then the resource path, exactly what urllib3 sends for the full URL.
        self._prefix = (urllib3.util.parse_url(host).path or "").rstrip("/")
        self._fixed_headers = f"Accept: {JSON}\r\nUser-Agent: {user_agent}\r\n"
        # Only connect errors are retried by urllib3: the request never reached the server.
        self._retries = urllib3.Retry(
            total=2, connect=2, read=0, redirect=0, status=0, other=0, raise_on_status=False
        )

    def send(self, call: Call, auth: str | None) -> Response | urllib3.BaseHTTPResponse:
        """One attempt of ``call`` (module docstring)."""
        if call.stream or self.lean is None:
            return self._send_pool(call, auth)
        return self._send_lean(call, auth)

    def _send_lean(self, call: Call, auth: str | None) -> Response:
        """One send on the calling thread's lean connection; the write guard runs inside,
        right before the bytes are sent."""
        assert self.lean is not None
        fixed = self._fixed_headers
        if call.accept != JSON:  # one of pyctrl.kube.options' constants
            fixed = f"Accept: {call.accept}\r\nUser-Agent: {self._user_agent}\r\n"
        if call.content_type is not None:
            fixed = f"{fixed}Content-Type: {call.content_type}\r\n"
        headers = fixed
        if auth:
            if "\r" in auth or "\n" in auth:
                raise ValueError("invalid Authorization header value")
            headers = f"{fixed}Authorization: {auth}\r\n"
        guard = None if call.method in _READ_METHODS else check_write
        return self.lean.request(call.method, self._prefix + call.path, headers, call.body,
                                 guard)

    def _send_pool(self, call: Call, auth: str | None) -> urllib3.BaseHTTPResponse:
        """One send through the urllib3 pool; the answer unread when ``call.stream``."""
        headers = {"Accept": call.accept, "User-Agent": self._user_agent}
        if call.content_type is not None:
            headers["Content-Type"] = call.content_type
        if auth:
            headers["Authorization"] = auth
        if call.method not in _READ_METHODS:
            check_write()  # after the limiter's wait, right before the send
        return self.pool.request(
            call.method, self._host + call.path, body=call.body, headers=headers,
            preload_content=not call.stream, timeout=call.timeout or self._timeout,
            retries=self._retries, redirect=False)

    def close(self) -> None:
        """Close the lean connections and the pool's (module docstring)."""
        if self.lean is not None:
            self.lean.close()
        # urllib3 2 no longer closes pools on clear(); close their idle sockets ourselves.
        for key in list(self.pool.pools.keys()):
            pool = self.pool.pools.get(key)
            if pool is not None:
                pool.close()
        self.pool.clear()
