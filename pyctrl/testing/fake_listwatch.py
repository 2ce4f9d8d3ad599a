"""FakeListWatch: a scriptable :class:`pyctrl.cache.listwatch.ListerWatcher` for tests.

Contract:

* ``list`` answers with the next queued response, in order: a page (``queue_list`` /
  ``queue_list_pages``) or an :class:`pyctrl.errors.ApiError` to raise (``queue_list_error``).
  With nothing queued it raises ``ServerError`` (a test forgot to script a list).
* ``watch`` (and ``watch_list``, the streaming list: recorded in ``watch_calls`` with
  ``send_initial_events=True``) returns the next queued :class:`FakeWatchStream`
  (``queue_watch``) or raises the next queued error (``queue_watch_error``: e.g.
  ``ServerError``, ``TooManyRequests``, ``Gone``). With nothing queued it opens a fresh
  stream that stays silent until closed, and which the test can still script through
  ``streams[-1]``.
* A :class:`FakeWatchStream` yields what the test pushes (``add``/``modify``/``delete``/
  ``bookmark``/``initial_events_end``/``error``/``error_gone``), live, in order. ``end()``
  drops the connection after what is queued; with nothing queued and not ended it blocks
  ("silent") until ``close()`` (which the reflector's stop/silence watchdog calls from
  another thread).
* Every call is recorded (``list_calls``/``watch_calls``: the keyword arguments), and
  ``wait_for_*`` lets a test block (real time, bounded) until the code under test got there.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from typing import Any

from pyctrl.errors import ApiError, ServerError
from pyctrl.kube.interface import RawObject, WatchEvent
from pyctrl.kube.options import INITIAL_EVENTS_END_ANNOTATION

__all__ = ["FakeListWatch", "FakeWatchStream"]

_END = object()


class FakeWatchStream:
    """A scripted watch stream (see module docstring)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._events: deque[Any] = deque()
        self._closed = False
        self._idle = False
        self.opened = threading.Event()
        self.consumed = 0

    # -- scripting --------------------------------------------------------------------------
    def push(self, event: WatchEvent) -> FakeWatchStream:
        with self._cond:
            self._events.append(event)
            self._cond.notify_all()
        return self

    def add(self, obj: RawObject) -> FakeWatchStream:
        return self.push({"type": "ADDED", "object": obj})

    def modify(self, obj: RawObject) -> FakeWatchStream:
        return self.push({"type": "MODIFIED", "object": obj})

    def delete(self, obj: RawObject) -> FakeWatchStream:
        return self.push({"type": "DELETED", "object": obj})

    def bookmark(self, resource_version: str) -> FakeWatchStream:
        return self.push({"type": "BOOKMARK",
                          "object": {"metadata": {"resourceVersion": resource_version}}})

    def error(self, code: int, reason: str = "", message: str = "") -> FakeWatchStream:
        return self.push({"type": "ERROR", "object": {
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": message or f"error {code}"}})

    def initial_events_end(self, resource_version: str) -> FakeWatchStream:
        """The BOOKMARK that ends a watch-list's initial events."""
        return self.push({"type": "BOOKMARK", "object": {"metadata": {
            "resourceVersion": resource_version,
            "annotations": {INITIAL_EVENTS_END_ANNOTATION: "true"}}}})

    def error_gone(self) -> FakeWatchStream:
        return self.error(410, "Expired", "too old resource version: 1 (2)")

    def end(self) -> FakeWatchStream:
        """Drop the connection once the queued events are consumed."""
        with self._cond:
            self._events.append(_END)
            self._cond.notify_all()
        return self

    # -- WatchStream --------------------------------------------------------------------------
    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        with self._cond:
            return self._closed

    def drained(self) -> bool:
        """True when every pushed event has been handed out."""
        with self._cond:
            return not self._events

    def wait_processed(self, timeout: float = 5.0) -> bool:
        """Block until every pushed event was handed out and the consumer came back for
        more (so it finished handling them); False on timeout."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._closed or (self._idle and not self._events), timeout)

    def __iter__(self) -> Iterator[WatchEvent]:
        while True:
            with self._cond:
                while not self._events and not self._closed:
                    self._idle = True
                    self._cond.notify_all()
                    self._cond.wait()
                self._idle = False
                if self._closed or self._events[0] is _END:
                    return
                event = self._events.popleft()
                self.consumed += 1
                self._cond.notify_all()
            yield event


class FakeListWatch:
    """Scripted LIST pages and WATCH streams (see module docstring)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._lists: deque[RawObject | ApiError] = deque()
        self._watches: deque[FakeWatchStream | ApiError] = deque()
        self.list_calls: list[dict[str, Any]] = []
        self.watch_calls: list[dict[str, Any]] = []
        self.streams: list[FakeWatchStream] = []

    # -- scripting --------------------------------------------------------------------------
    def queue_list(self, items: list[RawObject], resource_version: str,
                   continue_: str = "") -> None:
        """Queue one LIST page."""
        md: dict[str, Any] = {"resourceVersion": resource_version}
        if continue_:
            md["continue"] = continue_
        with self._cond:
            self._lists.append({"kind": "List", "apiVersion": "v1", "metadata": md,
                                "items": list(items)})

    def queue_list_pages(self, items: list[RawObject], resource_version: str,
                         page_size: int) -> None:
        """Queue a paged LIST: pages of ``page_size`` linked by continue tokens."""
        pages = [items[i:i + page_size] for i in range(0, len(items), page_size)] or [[]]
        for n, page in enumerate(pages):
            cont = f"continue-{n + 1}" if n + 1 < len(pages) else ""
            self.queue_list(page, resource_version, cont)

    def queue_list_error(self, err: ApiError) -> None:
        with self._cond:
            self._lists.append(err)

    def queue_watch(self, stream: FakeWatchStream | None = None) -> FakeWatchStream:
        """Queue a stream for the next WATCH (a new silent one by default) and return it."""
        stream = stream or FakeWatchStream()
        with self._cond:
            self._watches.append(stream)
        return stream

    def queue_watch_error(self, err: ApiError) -> None:
        """The next WATCH fails to open with ``err`` (e.g. ServerError, TooManyRequests)."""
        with self._cond:
            self._watches.append(err)

    # -- ListerWatcher ------------------------------------------------------------------------
    def list(self, *, limit: int | None, continue_: str | None,
             resource_version: str | None) -> RawObject:
        with self._cond:
            self.list_calls.append({"limit": limit, "continue_": continue_,
                                    "resource_version": resource_version})
            self._cond.notify_all()
            if not self._lists:
                raise ServerError("fake: no LIST response queued", 500, "InternalError")
            answer = self._lists.popleft()
        if isinstance(answer, ApiError):
            raise answer
        return answer

    def watch(self, *, resource_version: str, timeout_seconds: int,
              allow_watch_bookmarks: bool) -> FakeWatchStream:
        return self._open({"resource_version": resource_version,
                           "timeout_seconds": timeout_seconds,
                           "allow_watch_bookmarks": allow_watch_bookmarks})

    def watch_list(self, *, resource_version: str, timeout_seconds: int) -> FakeWatchStream:
        return self._open({"resource_version": resource_version,
                           "timeout_seconds": timeout_seconds, "allow_watch_bookmarks": True,
                           "send_initial_events": True})

    def _open(self, call: dict[str, Any]) -> FakeWatchStream:
        with self._cond:
            self.watch_calls.append(call)
            answer = self._watches.popleft() if self._watches else FakeWatchStream()
            if isinstance(answer, FakeWatchStream):
                self.streams.append(answer)
            self._cond.notify_all()
        if isinstance(answer, ApiError):
            raise answer
        answer.opened.set()
        return answer

    # -- synchronisation for tests --------------------------------------------------------------
    def wait_for_list_calls(self, n: int, timeout: float = 5.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: len(self.list_calls) >= n, timeout)

    def wait_for_watch_calls(self, n: int, timeout: float = 5.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: len(self.watch_calls) >= n, timeout)
