"""EventBroadcaster and EventRecorder: record core/v1 Events without ever blocking the caller.

Contract:

* ``recorder.event(...)`` builds the Event (timestamps from the Clock at call time) and puts it
  in a bounded buffer of ``queue_size``; when the buffer is full, or the broadcaster is shut
  down, the event is dropped and counted in ``pyctrl_events_dropped_total{reason}``. The caller
  never waits for the API server.
* One background sink thread (started on the first event) drains the buffer through an
  :class:`EventCorrelator` (aggregation, de-duplication, spam filter) and writes: a new Event
  is created; a repeated one is merge-patched with the higher count and created afresh when
  the patch finds it gone (NotFound). AlreadyExists and other 4xx answers drop the event;
  5xx/timeouts are retried up to ``max_retries`` times with ``retry_backoff`` seconds between.
* Events are the writes that can wait. With ``defer_while`` (a cheap predicate such as "the
  controller's work queue is not empty"), the sink holds back while it is true, so a burst of
  critical writes (Jobs at a minute tick) is not slowed by the events describing them. A
  minimum flow is guaranteed whatever the predicate says:

  - maximum age: an event buffered for ``max_defer`` seconds (Clock time since it was
    recorded) is written regardless of the predicate; events leave in FIFO order, so none
    waits longer than ``max_defer`` plus the time to write the ones ahead of it;
  - floor rate: while deferring, ``min_rate`` events per second (Clock time, counted from the
    moment deferral began, at most ``max(1, min_rate)`` saved up) are written anyway;
    ``min_rate=0`` disables the floor.

  Under constant load an event therefore waits at most ``max_defer`` and events flow at
  ``min_rate`` or more, instead of one per ``max_defer``. While deferring, the sink re-asks
  ``defer_while`` every 50 ms of real time (the predicate is about writes happening now).
* ``flush(timeout)`` writes what is buffered now without deferring and waits for it (the
  Manager calls it after the controllers stop, while the leader lease is still held).
* Written through a leader-scoped client (:class:`pyctrl.kube.FencedClient`), an event the
  client refuses (:class:`pyctrl.errors.NotLeader`) is dropped, counted as ``not_leader``.
* ``shutdown(timeout)`` stops accepting events, lets the sink drain for at most ``timeout``
  seconds, drops what is left (counted), and joins the thread.
* Events land in the involved object's namespace ("default" for cluster-scoped objects), with
  ``involvedObject`` (apiVersion, kind, name, namespace, uid, resourceVersion),
  ``source.component``/``source.host``, ``reportingComponent``/``reportingInstance``.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Literal, Protocol

import structlog
from prometheus_client import CollectorRegistry, Counter

from pyctrl._errorlog import ErrorLog
from pyctrl.api.types import Object as Kind
from pyctrl.clock import Clock, RealClock
from pyctrl.collectors import per_registry
from pyctrl.errors import (
    AlreadyExists,
    ApiError,
    NotFound,
    NotLeader,
    ServerError,
    ServerTimeout,
    Timeout,
    TooManyRequests,
)
from pyctrl.kube import meta
from pyctrl.kube.interface import Client, RawObject
from pyctrl.kube.meta import format_time
from pyctrl.kube.resource import EVENTS
from pyctrl.record.correlator import CorrelateResult, EventCorrelator

__all__ = ["EventBroadcaster", "EventRecorder", "EventType"]

log = structlog.get_logger(__name__)

Involved = RawObject | Kind
"""What an event is about: a raw object or a typed one."""

EventType = Literal["Normal", "Warning"]
_RETRYABLE = (ServerError, ServerTimeout, Timeout, TooManyRequests)
_DEFER_POLL_SECONDS = 0.05


class EventRecorder(Protocol):
    """Records an Event about ``obj`` (a raw object dict with metadata, apiVersion, kind)."""

    def event(self, obj: Involved, type: EventType, reason: str, message: str) -> None: ...

    def eventf(
        self, obj: Involved, type: EventType, reason: str, message_fmt: str, *args: object
    ) -> None: ...


def _new_dropped_counter(registry: CollectorRegistry | None) -> Counter:
    return Counter(
        "pyctrl_events_dropped", "Events not written to the API server, by reason.",
        ["reason"], registry=registry,
    )


_dropped_counter = per_registry(_new_dropped_counter)


def _check_deferral(max_defer: float, min_rate: float) -> None:
    if not max_defer > 0:
        raise ValueError("max_defer must be greater than zero")
    if not min_rate >= 0:
        raise ValueError("min_rate must not be negative")


class _Recorder:
    """The EventRecorder handed out by :meth:`EventBroadcaster.new_recorder`."""

    def __init__(self, broadcaster: EventBroadcaster, component: str) -> None:
        self._b = broadcaster
        self._component = component

    def event(self, obj: Involved, type: EventType, reason: str, message: str) -> None:
        if type not in ("Normal", "Warning"):
            log.error("unsupported event type; dropped", type=type, reason=reason)
            return
        try:
            built = self._b._build(obj, self._component, type, reason, message)
        except Exception:  # a malformed object must never break the caller
            log.exception("could not build event; dropped", reason=reason)
            return
        self._b._enqueue(built)

    def eventf(
        self, obj: Involved, type: EventType, reason: str, message_fmt: str, *args: object
    ) -> None:
        self.event(obj, type, reason, message_fmt % args if args else message_fmt)


class EventBroadcaster:
    """Owns the buffer, correlator and sink thread shared by its recorders."""

    def __init__(
        self,
        client: Client,
        *,
        component: str,
        host: str | None = None,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        queue_size: int = 1000,
        max_retries: int = 3,
        retry_backoff: float = 1.0,
        correlator: EventCorrelator | None = None,
        defer_while: Callable[[], bool] | None = None,
        max_defer: float = 10.0,
        min_rate: float = 5.0,
    ) -> None:
        _check_deferral(max_defer, min_rate)
        self._client = client
        self._component = component
        self._host = host or ""
        self._clock: Clock = clock or RealClock()
        self._errors = ErrorLog(log, self._clock)  # an outage: a few lines per error kind
        self._queue_size = queue_size
        self._max_retries = max_retries
        self._retry_backoff = retry_backoff
        self._correlator = correlator or EventCorrelator(self._clock)
        self._dropped = _dropped_counter(registry)
        self._cond = threading.Condition(threading.Lock())
        self._buffer: deque[tuple[float, RawObject]] = deque()  # (Clock monotonic, event)
        self._busy = False
        self._closed = False
        self._abort = threading.Event()
        self._flushing = False
        self._thread: threading.Thread | None = None
        self._last_ns = 0
        self._defer_while = defer_while
        self._max_defer = max_defer
        self._min_rate = min_rate
        # Floor-rate token bucket, used only by the sink thread while deferring.
        self._deferring = False
        self._tokens = 0.0
        self._refilled_at = 0.0

    def set_defer_while(self, predicate: Callable[[], bool] | None,
                        max_defer: float | None = None,
                        min_rate: float | None = None) -> None:
        """Hold events back while ``predicate()`` is true, for at most ``max_defer`` seconds
        per event, letting at least ``min_rate`` events/s through (see module docstring)."""
        _check_deferral(self._max_defer if max_defer is None else max_defer,
                        self._min_rate if min_rate is None else min_rate)
        self._defer_while = predicate
        if max_defer is not None:
            self._max_defer = max_defer
        if min_rate is not None:
            self._min_rate = min_rate

    def new_recorder(self, component: str | None = None) -> EventRecorder:
        """A recorder whose events carry ``source.component = component`` (default: ours)."""
        return _Recorder(self, component or self._component)

    # -- producer side ------------------------------------------------------------------
    def _build(self, obj: Involved, component: str, type: str, reason: str,
               msg: str) -> RawObject:
        ref: dict[str, Any] = {
            "apiVersion": meta.api_version(obj),
            "kind": meta.kind(obj),
            "name": meta.name(obj),
            "namespace": meta.namespace(obj),
            "uid": meta.uid(obj),
            "resourceVersion": meta.resource_version(obj),
        }
        ref = {k: v for k, v in ref.items() if v}
        stamp = format_time(self._clock.now())
        with self._cond:
            ns = max(int(self._clock.time() * 1e9), self._last_ns + 1)
            self._last_ns = ns
        source = {"component": component}
        if self._host:
            source["host"] = self._host
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref.get('name', 'unknown')}.{ns:x}",
                "namespace": ref.get("namespace") or "default",
            },
            "involvedObject": ref,
            "type": type,
            "reason": reason,
            "message": msg,
            "source": source,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": component,
            "reportingInstance": self._host,
        }

    def _enqueue(self, event: RawObject) -> None:
        with self._cond:
            if self._closed:
                reason = "shutdown"
            elif len(self._buffer) >= self._queue_size:
                reason = "queue_full"
            else:
                self._buffer.append((self._clock.monotonic(), event))
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._sink, name=f"event-sink-{self._component}", daemon=True
                    )
                    self._thread.start()
                self._cond.notify_all()
                return
        self._dropped.labels(reason=reason).inc()

    # -- lifecycle ----------------------------------------------------------------------
    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Block (real time) until every buffered event was handled; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._buffer and not self._busy, timeout)

    def flush(self, timeout: float = 5.0) -> bool:
        """Write everything buffered now, ignoring ``defer_while``; False on timeout."""
        self._flushing = True
        try:
            return self.wait_idle(timeout)
        finally:
            self._flushing = False

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop accepting events, drain for at most ``timeout`` seconds, join the sink."""
        with self._cond:
            self._closed = True
            thread = self._thread
            self._cond.notify_all()
        if thread is None:
            return
        thread.join(timeout)
        if thread.is_alive():
            self._abort.set()
            thread.join()

    # -- sink side ----------------------------------------------------------------------
    def _sink(self) -> None:
        while True:
            with self._cond:
                while not self._buffer and not self._closed:
                    self._cond.wait()
                if not self._buffer:
                    return
                enqueued_at = self._buffer[0][0]
            if not self._may_write(enqueued_at):
                # Real-time poll (a stop-event wait), not the Clock: the predicate is about
                # the API server's load now; the age and floor are judged on the Clock.
                self._abort.wait(_DEFER_POLL_SECONDS)
                continue
            with self._cond:
                _, event = self._buffer.popleft()  # the only consumer: the head is unchanged
                self._busy = True
            try:
                if self._abort.is_set():
                    self._dropped.labels(reason="shutdown").inc()
                else:
                    self._handle(event)
            except Exception as err:
                self._errors.failure("event sink failed; event dropped", err)
                self._dropped.labels(reason="error").inc()
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _may_write(self, enqueued_at: float) -> bool:
        """Whether the oldest buffered event (recorded at ``enqueued_at``) may go out now."""
        predicate = self._defer_while
        if predicate is None or self._closed or self._flushing or self._abort.is_set():
            self._deferring = False
            return True
        now = self._clock.monotonic()
        if now - enqueued_at >= self._max_defer:
            return True  # maximum age reached: written whatever the predicate says
        try:
            defer = predicate()
        except Exception:
            log.exception("event defer predicate failed; writing now")
            defer = False
        if not defer:
            self._deferring = False
            return True
        if not self._deferring:  # deferral begins: the floor counts from now
            self._deferring = True
            self._tokens = 0.0
            self._refilled_at = now
        if self._min_rate > 0:
            burst = max(1.0, self._min_rate)
            elapsed = max(0.0, now - self._refilled_at)
            self._tokens = min(burst, self._tokens + elapsed * self._min_rate)
            self._refilled_at = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
        return False

    def _handle(self, event: RawObject) -> None:
        result = self._correlator.correlate(event)
        if result.skip:
            self._dropped.labels(reason="spam").inc()
            log.debug("event dropped by spam filter", reason=event.get("reason"))
            return
        for attempt in range(self._max_retries + 1):
            try:
                written = self._write(result)
            except _RETRYABLE as err:
                self._errors.failure("event write failed; retrying", err, level="info",
                                     attempt=attempt)
                if attempt == self._max_retries or self._clock.sleep(
                    self._retry_backoff * (attempt + 1), self._abort
                ):
                    break
                continue
            except NotLeader as err:
                log.info("event not written: not the leader; dropped", error=str(err),
                         reason=event.get("reason"))
                self._dropped.labels(reason="not_leader").inc()
                return
            except ApiError as err:
                self._errors.failure("event rejected; dropped", err, level="info",
                                     event_reason=event.get("reason"))
                self._dropped.labels(reason="rejected").inc()
                return
            self._correlator.update_state(written, result.key)
            return
        self._dropped.labels(reason="error").inc()

    def _write(self, result: CorrelateResult) -> RawObject:
        event = result.event
        md = event["metadata"]
        if result.patch is not None:
            try:
                return self._client.patch(
                    EVENTS, md["name"], result.patch, md["namespace"], patch_type="merge"
                )
            except NotFound:
                pass  # it expired or was deleted: create it again with the running count
        fresh = dict(event)
        fresh["metadata"] = {k: v for k, v in md.items() if k != "resourceVersion"}
        try:
            return self._client.create(EVENTS, fresh, md["namespace"])
        except AlreadyExists:
            log.debug("event already exists", name=md["name"])
            return fresh
