"""The FakeClient's watch side: streams, and the fan-out of every write to the open watches.

Contract:

* :class:`FakeWatch` is a :class:`WatchStream` fed by the fake; ``close()`` works from any
  thread; ``end()`` ends it as a server would (queued events are still delivered); with a
  timeout it ends after that much of the Clock's time.
* :class:`WatchFanOut` keeps the retained history (``history_size`` events) and the open
  watches. :meth:`WatchFanOut.record` appends a write to the history and pushes it to every
  watch of that resource that wants it (namespace, label and field selectors); an object
  moving out of a watch's selector arrives there as DELETED, one moving in as ADDED.
  :meth:`WatchFanOut.replay` sends a new watch the history after a resourceVersion, or one
  ERROR event (410 Expired) and the end when that is older than the retained history
  (:meth:`WatchFanOut.compact` forgets all of it).
* All state is guarded by the client's lock, which the caller holds around a write and its
  :meth:`~WatchFanOut.record`, so watches see writes in resourceVersion order.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pyctrl.clock import Clock
from pyctrl.kube.interface import RawObject, WatchEvent, WatchStream
from pyctrl.kube.resource import Resource
from pyctrl.kube.status import status_body
from pyctrl.testing.fake_objects import copy_object, meta_of, partial_metadata, resource_key

__all__ = ["FakeWatch", "MetadataWatch", "WatchFanOut", "Watcher"]


class FakeWatch:
    """A :class:`WatchStream` fed by the fake; ``close()`` works from any thread."""

    def __init__(self, clock: Clock, timeout: float | None,
                 on_close: Callable[[FakeWatch], None] | None = None) -> None:
        self._clock = clock
        self._cond = threading.Condition(threading.Lock())
        self._events: deque[WatchEvent] = deque()
        self._stopped = False
        self._deadline = None if timeout is None else clock.monotonic() + timeout
        self._on_close = on_close

    def push(self, event: WatchEvent) -> None:
        with self._cond:
            if not self._stopped:
                self._events.append(event)
                self._cond.notify_all()

    def end(self) -> None:
        """End the stream as a server would: queued events are still delivered."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._on_close is not None:
            self._on_close(self)

    def close(self) -> None:
        with self._cond:
            self._events.clear()
        self.end()

    @property
    def stopped(self) -> bool:
        with self._cond:
            return self._stopped

    def __iter__(self) -> Iterator[WatchEvent]:
        while True:
            with self._cond:
                while not self._events and not self._stopped:
                    if self._deadline is None:
                        self._cond.wait()  # no time involved: only push/end wake us
                        continue
                    remaining = self._deadline - self._clock.monotonic()
                    if remaining <= 0:
                        self._stopped = True
                        break
                    self._clock.wait(self._cond, remaining)
                if not self._events:
                    break
                event = self._events.popleft()
            yield event
        if self._on_close is not None:
            self._on_close(self)


class MetadataWatch:
    """A stream whose events carry ``PartialObjectMetadata`` (a metadata-only watch)."""

    def __init__(self, inner: WatchStream) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[WatchEvent]:
        for event in self._inner:
            yield {**event, "object": partial_metadata(event.get("object") or {})}

    def close(self) -> None:
        self._inner.close()


@dataclass
class Watcher:
    """One open watch: what it selects and the stream it feeds."""

    resource: Resource
    namespace: str | None
    labels: Any
    fields: Any
    bookmarks: bool
    stream: FakeWatch

    def wants(self, obj: RawObject) -> bool:
        ns = meta_of(obj).get("namespace")
        return ((self.namespace is None or ns == self.namespace)
                and self.labels.matches_object(obj) and self.fields.matches(obj))


@dataclass(frozen=True)
class _Record:
    rv: int
    resource: Resource
    type: str
    obj: RawObject
    old: RawObject | None


class WatchFanOut:
    """History and open watches of one FakeClient (see module docstring)."""

    def __init__(self, clock: Clock, lock: threading.RLock, *, history_size: int,
                 honor_timeouts: bool) -> None:
        self._clock = clock
        self._lock = lock
        self._history: deque[_Record] = deque(maxlen=history_size)
        self._compacted = 0  # events at or below this resourceVersion are forgotten
        self._watchers: list[Watcher] = []
        self._honor_timeouts = honor_timeouts

    @property
    def compacted(self) -> int:
        """Writes at or below this resourceVersion are no longer in the history."""
        with self._lock:
            return self._compacted

    def compact(self, rv: int) -> None:
        with self._lock:
            self._history.clear()
            self._compacted = rv

    def record(self, resource: Resource, etype: str, obj: RawObject, old: RawObject | None,
               rv: int) -> None:
        """Append a write at ``rv`` to the history and push it to the watches that want it."""
        self._history.append(_Record(rv, resource, etype, obj, old))
        if len(self._history) == self._history.maxlen:
            self._compacted = max(self._compacted, self._history[0].rv - 1)
        for w in self._watchers:
            if resource_key(w.resource) == resource_key(resource):
                event = self._event_for(w, etype, obj, old)
                if event is not None:
                    w.stream.push(event)

    @staticmethod
    def _event_for(w: Watcher, etype: str, obj: RawObject,
                   old: RawObject | None) -> WatchEvent | None:
        now = w.wants(obj)
        if etype == "MODIFIED" and old is not None:
            was = w.wants(old)
            if was and not now:
                return {"type": "DELETED", "object": copy_object(obj)}
            if now and not was:
                return {"type": "ADDED", "object": copy_object(obj)}
        return {"type": etype, "object": copy_object(obj)} if now else None

    def new_watcher(self, resource: Resource, namespace: str | None, labels: Any, fields: Any,
                    bookmarks: bool, timeout_seconds: int | None) -> Watcher:
        """A watch not yet open (see :meth:`add`); its stream forgets itself when it ends."""
        timeout = timeout_seconds if self._honor_timeouts else None
        return Watcher(resource, namespace, labels, fields, bookmarks,
                       FakeWatch(self._clock, timeout, self.forget))

    def replay(self, watcher: Watcher, since: int) -> bool:
        """Push the history after ``since``; False (after an ERROR 410 and the end of the
        stream) when ``since`` is older than the retained history."""
        with self._lock:
            if since < self._compacted:
                watcher.stream.push({"type": "ERROR", "object": status_body(
                    410, "Expired", f"too old resource version: {since} ({self._compacted + 1})")})
                watcher.stream.end()
                return False
            for rec in self._history:
                if rec.rv > since and resource_key(rec.resource) == resource_key(
                        watcher.resource):
                    event = self._event_for(watcher, rec.type, rec.obj, rec.old)
                    if event is not None:
                        watcher.stream.push(event)
            return True

    def add(self, watcher: Watcher) -> None:
        with self._lock:
            self._watchers.append(watcher)

    def forget(self, stream: FakeWatch) -> None:
        with self._lock:
            self._watchers = [w for w in self._watchers if w.stream is not stream]

    def send_bookmarks(self, rv: int) -> None:
        with self._lock:
            for w in self._watchers:
                if w.bookmarks:
                    w.stream.push({"type": "BOOKMARK", "object": {
                        "apiVersion": w.resource.api_version, "kind": w.resource.kind,
                        "metadata": {"resourceVersion": str(rv)}}})

    def end_all(self) -> None:
        with self._lock:
            watchers = list(self._watchers)
        for w in watchers:
            w.stream.end()

    def count(self) -> int:
        with self._lock:
            return len(self._watchers)
