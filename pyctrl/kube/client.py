"""RESTClient: the :class:`pyctrl.kube.interface.Client` over HTTP, raw JSON dicts and orjson.

Contract:

* Every call is one HTTP request to :func:`pyctrl.kube.paths.resource_path` (names and
  namespaces percent-quoted) plus query parameters. Bodies are encoded and decoded with
  orjson; no generated model classes are involved.
* Transport: with ``transport="lean"`` (the default) every non-watch request goes through
  :class:`pyctrl.kube.transport.UnaryTransport`: one keep-alive connection per calling thread,
  opened by urllib3 with the pool's TLS settings, on which the request and its answer are
  written and parsed directly; a connection the server closed while idle is replaced before
  the send, and a request that meets a dead reused connection is resent only when that is
  safe (see that module). Watches, and every request with ``transport="urllib3"`` (the
  escape hatch, kept) or through an HTTP(S) proxy, use one keep-alive ``urllib3`` pool shared
  by all threads (``pool_maxsize`` connections per host, default 32; it does not bound the
  lean transport, which keeps one connection per calling thread; both get their TLS
  settings from :mod:`pyctrl.kube.pool`). Both transports send the same headers and raise
  the same errors: one request/retry loop (``_exchange``: limiter, credentials, metrics,
  error mapping, 429 retries) drives either sender (:mod:`pyctrl.kube.senders`). Watches always
  take the pool, the lean transport reading whole answers only; their body is de-chunked
  from the socket reader under urllib3's response (:mod:`pyctrl.kube.watch`), the one
  place that reads urllib3 internals (``make urllib3-range`` runs the unit suite on the
  oldest and the newest urllib3 pyproject allows, so a release cannot switch it silently).
* Before each request (and each retry) the caller takes a token from a client-side
  :class:`TokenBucketRateLimiter`. Defaults are ``qps=50, burst=100`` (why not client-go's
  5/10: docs/DESIGN.md, "Numbers behind the defaults"). A WATCH takes a token to start, never while
  it streams. ``qps <= 0`` disables the limiter (``python -m cronjob_controller`` does by
  default, relying on APF and the 429 retries below; docs/OPERATOR.md "Rate limits").
* Non-2xx answers and transport failures raise as :mod:`pyctrl.kube.httperrors` maps them
  (:func:`pyctrl.errors.from_status`; :class:`pyctrl.errors.Timeout`,
  :class:`pyctrl.errors.Unreachable`). A 429 means the server did not process the request,
  so any verb is retried after ``Retry-After`` seconds (the header, else
  ``details.retryAfterSeconds``, else 1 s), waiting on the injected clock, at most
  ``max_retries`` (10, as client-go) times; then :class:`TooManyRequests` is raised.
* ``metadata_only`` lists and watches (:class:`pyctrl.kube.ListOptions`) send the
  ``PartialObjectMetadata`` Accept header it names; everything else asks for
  ``application/json``.
* Credentials come from :class:`KubeConfig` on every request, so rotated tokens and exec
  plugins keep working. With a ``registry``, request counts and latencies are recorded (see
  :mod:`pyctrl.kube.metrics`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Literal, Unpack

import orjson
import structlog
import urllib3
from prometheus_client import CollectorRegistry
from urllib3.exceptions import HTTPError

from pyctrl.clock import Clock, RealClock
from pyctrl.errors import ApiError, TooManyRequests
from pyctrl.kube import answers
from pyctrl.kube._kubeconfig import ConnectionSettings
from pyctrl.kube.body import decode_head, decode_object
from pyctrl.kube.config import KubeConfig, load_config
from pyctrl.kube.httperrors import error_from_answer, error_from_pool_answer, transport_error
from pyctrl.kube.interface import PatchBody, RawObject
from pyctrl.kube.metrics import RequestMetrics, request_metrics
from pyctrl.kube.options import JSON, ListArgs, ListOptions, WatchArgs
from pyctrl.kube.paths import request_scope, resource_path
from pyctrl.kube.ratelimit import TokenBucketRateLimiter
from pyctrl.kube.resource import Resource
from pyctrl.kube.senders import Call, Senders
from pyctrl.kube.transport import Response, TransportClosed
from pyctrl.kube.watch import HTTPWatchStream
from pyctrl.kube.write_options import (
    PATCH_CONTENT_TYPES,
    DeleteArgs,
    DeleteOptions,
    PatchArgs,
    PatchOptions,
)

if TYPE_CHECKING:
    from kubernetes.client import Configuration

__all__ = ["PATCH_CONTENT_TYPES", "RESTClient"]

log = structlog.get_logger(__name__)

_DEFAULT_RETRY_AFTER = 1.0


class RESTClient:
    """A :class:`pyctrl.kube.interface.Client` talking to a real API server."""

    def __init__(
        self,
        config: KubeConfig | ConnectionSettings | Configuration,
        *,
        qps: float = 50.0,
        burst: int = 100,
        user_agent: str = "pyctrl",
        timeout: float = 30.0,
        registry: CollectorRegistry | None = None,
        clock: Clock | None = None,
        max_retries: int = 10,
        pool_maxsize: int = 32,
        transport: Literal["lean", "urllib3"] = "lean",
    ) -> None:
        if pool_maxsize < 1:
            raise ValueError("pool_maxsize must be >= 1")
        if transport not in ("lean", "urllib3"):
            raise ValueError(f"transport must be 'lean' or 'urllib3', not {transport!r}")
        if "\r" in user_agent or "\n" in user_agent:
            raise ValueError("user_agent must not contain CR or LF")
        self.config = config if isinstance(config, KubeConfig) else KubeConfig(config)
        self._clock: Clock = clock if clock is not None else RealClock()
        self._limiter = TokenBucketRateLimiter(qps, burst, self._clock)
        self._connect_timeout = timeout
        self._max_retries = max_retries
        self._user_agent = user_agent
        self._host = self.config.host
        self._netloc = self.config.netloc
        self._metrics: RequestMetrics | None = (
            request_metrics(registry) if registry is not None else None
        )
        self._senders = Senders(self.config.configuration, self._host, user_agent=user_agent,
                                timeout=timeout, pool_maxsize=pool_maxsize,
                                lean=transport == "lean")
        self._lean = self._senders.lean  # None: every request goes through the pool
        self._closed = threading.Event()
        self._watches: set[HTTPWatchStream] = set()
        self._watches_lock = threading.Lock()

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: str | None = None, context: str | None = None, **kwargs: Any
    ) -> RESTClient:
        """Load a config with :func:`pyctrl.kube.load_config` and build a client on it."""
        return cls(load_config(kubeconfig, context), **kwargs)

    @property
    def rate_limiter(self) -> TokenBucketRateLimiter:
        return self._limiter

    def close(self) -> None:
        """Close open watches and pooled connections; later and waiting calls fail."""
        self._closed.set()
        with self._watches_lock:
            watches = list(self._watches)
        for w in watches:
            w.close()
        self._senders.close()

    def __enter__(self) -> RESTClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- URL building -------------------------------------------------------------------
    def url(self, resource: Resource, namespace: str | None = None, name: str | None = None,
            subresource: str | None = None, query: dict[str, str] | None = None) -> str:
        """The full URL for a collection or object, with an encoded query string."""
        return self._host + self._path(resource, namespace, name, subresource, query)

    # The resource path and query (no server URL); the namespace a call uses.
    _path = staticmethod(resource_path)
    _scope = staticmethod(request_scope)

    # -- transport ----------------------------------------------------------------------
    def _admit(self) -> None:
        """Take a limiter token; refuse if the client is (or gets) closed meanwhile."""
        if self._closed.is_set() or not self._limiter.accept(self._closed):
            raise ApiError("the client is closed", reason="ClientClosed")

    def _retry_throttled(self, err: ApiError, status: int, attempt: int, method: str,
                         path: str) -> bool:
        """After a non-2xx answer: wait and return True if a 429 is to be retried."""
        if status != 429 or attempt >= self._max_retries:
            return False
        wait = (err.retry_after if isinstance(err, TooManyRequests) else None)
        wait = _DEFAULT_RETRY_AFTER if wait is None else wait
        log.info("throttled by the server, retrying", method=method, url=self._host + path,
                 retry_after=wait, attempt=attempt + 1)
        return not self._clock.sleep(wait, self._closed)

    def _request(self, method: str, path: str, body: bytes | None = None,
                 content_type: str | None = None, accept: str = JSON) -> bytes:
        """One non-watch request (``path`` as from :meth:`_path`); the 2xx answer's body."""
        reply = self._exchange(Call(method, path, body, content_type, accept))
        return reply.data

    def _stream(self, method: str, path: str, timeout: urllib3.Timeout,
                accept: str = JSON) -> urllib3.BaseHTTPResponse:
        """A request whose 2xx answer is returned unread (a watch), through urllib3."""
        reply = self._exchange(Call(method, path, None, None, accept, stream=True,
                                    timeout=timeout))
        assert isinstance(reply, urllib3.BaseHTTPResponse)
        return reply

    def _exchange(self, call: Call) -> Response | urllib3.BaseHTTPResponse:
        """The one request/retry loop: limiter token, credentials, the send (by the lean
        transport, else the urllib3 pool: streams, ``transport="urllib3"``, a proxy), request
        metrics, errors, 429 retries after Retry-After on the clock, and one retry after a 401
        when the configuration could renew its credential (an exec plugin's, run again)."""
        send = self._senders.send
        attempt = 0
        renewed = False
        while True:
            self._admit()
            auth = self.config.authorization()
            start = self._clock.monotonic()
            try:
                reply = send(call, auth)
            except TransportClosed:
                raise ApiError("the client is closed", reason="ClientClosed") from None
            except (HTTPError, OSError) as exc:
                self._observe(call.method, "<error>", start)
                raise transport_error(call.method, self._host + call.path, exc) from exc
            status = reply.status
            self._observe(call.method, str(status), start)
            if status < 500 and status != 429:
                answers.note()
            if 200 <= status < 300:
                return reply
            err = (error_from_answer(status, reply.data, reply.header("retry-after"))
                   if isinstance(reply, Response) else error_from_pool_answer(reply))
            if self._retry_throttled(err, status, attempt, call.method, call.path):
                attempt += 1
                continue
            if status == 401 and not renewed and self.config.renew_credentials():
                renewed = True  # the server refused the cached credential: ask for a new one
                continue
            raise err

    def _observe(self, method: str, code: str, start: float) -> None:
        if self._metrics is not None:
            self._metrics.observe(method=method, host=self._netloc, code=code,
                                  seconds=max(0.0, self._clock.monotonic() - start))

    def _call(self, method: str, path: str, body: object = None,
              content_type: str = "application/json") -> RawObject:
        data = orjson.dumps(body) if body is not None else None
        return decode_object(
            self._request(method, path, data, content_type if data is not None else None))

    # -- the Client protocol --------------------------------------------------------------
    def get(self, resource: Resource, name: str, namespace: str | None = None) -> RawObject:
        ns = self._scope(resource, namespace)
        return self._call("GET", self._path(resource, ns, name))

    def get_raw(self, resource: Resource, name: str, namespace: str | None = None) -> bytes:
        """:meth:`get`, but the undecoded JSON body (a typed client decodes it straight into
        its class; errors are raised as by ``get``)."""
        ns = self._scope(resource, namespace)
        return self._request("GET", self._path(resource, ns, name))

    def list(self, resource: Resource, namespace: str | None = None, *,
             options: ListOptions | None = None, **kwargs: Unpack[ListArgs]) -> RawObject:
        return decode_object(self.list_raw(resource, namespace, options=options, **kwargs))

    def list_raw(self, resource: Resource, namespace: str | None = None, *,
                 options: ListOptions | None = None, **kwargs: Unpack[ListArgs]) -> bytes:
        """:meth:`list`, but the undecoded JSON body (errors are raised as by ``list``).

        Lets a paged lister read the next ``continue`` token before decoding a whole page.
        """
        opts = ListOptions.of(options, kwargs)
        ns = self._scope(resource, namespace, required=False)
        return self._request("GET", self._path(resource, ns, query=opts.list_query()),
                             accept=opts.accept(watch=False))

    def watch(self, resource: Resource, namespace: str | None = None, *,
              options: ListOptions | None = None,
              **kwargs: Unpack[WatchArgs]) -> HTTPWatchStream:
        """Open a WATCH (see :class:`pyctrl.kube.interface.Client` and
        :class:`pyctrl.kube.ListOptions`, ``send_initial_events`` included)."""
        opts = ListOptions.of(options, kwargs)
        query = opts.watch_query()
        timeout_seconds = opts.timeout_seconds
        ns = self._scope(resource, namespace, required=False)
        # No read timeout beyond the server's own end of the stream (plus slack): a quiet
        # watch is normal, and bookmarks arrive only about once a minute.
        read = None if timeout_seconds is None else timeout_seconds + self._connect_timeout
        resp = self._stream(
            "GET", self._path(resource, ns, query=query),
            urllib3.Timeout(connect=self._connect_timeout, read=read),
            accept=opts.accept(watch=True),
        )
        stream: HTTPWatchStream

        def forget() -> None:
            with self._watches_lock:
                self._watches.discard(stream)

        stream = HTTPWatchStream(resp, on_end=forget)
        with self._watches_lock:
            self._watches.add(stream)
        return stream

    def create(self, resource: Resource, obj: RawObject, namespace: str | None = None, *,
               dry_run: bool = False) -> RawObject:
        """POST ``obj``; with ``dry_run`` the server validates and admits it (``dryRun=All``)
        and returns what it would store, storing nothing."""
        ns = self._scope(resource, namespace, obj)
        query = {"dryRun": "All"} if dry_run else None
        return self._call("POST", self._path(resource, ns, query=query), _typed(resource, obj))

    def update(self, resource: Resource, obj: RawObject, namespace: str | None = None) -> RawObject:
        ns = self._scope(resource, namespace, obj)
        path = self._path(resource, ns, _name_of(obj))
        return self._call("PUT", path, _typed(resource, obj))

    def update_status(
        self, resource: Resource, obj: RawObject, namespace: str | None = None
    ) -> RawObject:
        ns = self._scope(resource, namespace, obj)
        path = self._path(resource, ns, _name_of(obj), "status")
        return self._call("PUT", path, _typed(resource, obj))

    def patch(self, resource: Resource, name: str, patch: PatchBody,
              namespace: str | None = None, **kwargs: Unpack[PatchArgs]) -> RawObject:
        opts = PatchOptions.of(kwargs)
        if opts.patch_type == "apply" and isinstance(patch, dict):
            patch = _typed(resource, patch)
        ns = self._scope(resource, namespace)
        path = self._path(resource, ns, name, opts.subresource, opts.query())
        if opts.answer == "metadata":  # the caller reads only the answer's metadata
            return decode_head(self._request("PATCH", path, orjson.dumps(patch),
                                             opts.content_type))
        return self._call("PATCH", path, patch, opts.content_type)

    def delete(self, resource: Resource, name: str, namespace: str | None = None,
               **kwargs: Unpack[DeleteArgs]) -> RawObject | None:
        ns = self._scope(resource, namespace)
        path = self._path(resource, ns, name)
        body = self._call("DELETE", path, DeleteOptions.of(kwargs).body())
        # Most resources answer with the deleted object; a few with a success Status.
        return None if body.get("kind") == "Status" else body


def _typed(resource: Resource, obj: RawObject) -> RawObject:
    if obj.get("apiVersion") and obj.get("kind"):
        return obj
    return {"apiVersion": resource.api_version, "kind": resource.kind, **obj}


def _name_of(obj: RawObject) -> str:
    name = (obj.get("metadata") or {}).get("name")
    if not name:
        raise ValueError("object has no metadata.name")
    return str(name)
