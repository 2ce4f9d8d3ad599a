"""Event handlers and the per-handler delivery machinery of a SharedIndexInformer.

Contract (client-go ``sharedProcessor`` / ``processorListener``):

* A :class:`ResourceEventHandler` gets ``on_add(obj, is_in_initial_list)``,
  ``on_update(old, new)`` and ``on_delete(obj)``; ``obj`` in ``on_delete`` may be a
  :class:`DeletedFinalStateUnknown` tombstone. Objects are the cache's own: read-only.
* Each registered handler has its own unbounded buffer and its own thread, and sees its
  notifications strictly in the order the informer produced them. A slow handler delays only
  itself: the informer appends to buffers and never waits on a handler.
* A handler that raises is logged (with the traceback) and keeps receiving notifications.
* ``ResourceEventHandlerRegistration.has_synced()`` is True once the informer has synced and
  this handler has finished processing every add from the initial list (for a handler added
  late: every add replayed from the cache at registration).
* Resync: a handler with a resync period gets the cache replayed as ``on_update(obj, obj)``
  every period; the processor decides which handlers are due (``should_resync``).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import structlog

from pyctrl._errorlog import ErrorLog
from pyctrl.cache.keys import DeletedFinalStateUnknown
from pyctrl.kube.interface import RawObject

__all__ = [
    "ResourceEventHandler",
    "ResourceEventHandlerDetailedFuncs",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
]

log = structlog.get_logger(__name__)

_ADD, _UPDATE, _DELETE = 0, 1, 2


class ResourceEventHandler(Protocol):
    """Receives an informer's notifications (see module docstring)."""

    def on_add(self, obj: RawObject, is_in_initial_list: bool) -> None: ...

    def on_update(self, old: RawObject, new: RawObject) -> None: ...

    def on_delete(self, obj: RawObject | DeletedFinalStateUnknown) -> None: ...


@dataclass(frozen=True, slots=True)
class ResourceEventHandlerFuncs:
    """A handler from optional callables; missing ones ignore the notification.

    ``add_func`` takes just the object (client-go's ``AddFunc``); use
    :class:`ResourceEventHandlerDetailedFuncs` to also receive ``is_in_initial_list``.
    """

    add_func: Callable[[RawObject], None] | None = None
    update_func: Callable[[RawObject, RawObject], None] | None = None
    delete_func: Callable[[RawObject | DeletedFinalStateUnknown], None] | None = None

    def on_add(self, obj: RawObject, is_in_initial_list: bool) -> None:
        if self.add_func is not None:
            self.add_func(obj)

    def on_update(self, old: RawObject, new: RawObject) -> None:
        if self.update_func is not None:
            self.update_func(old, new)

    def on_delete(self, obj: RawObject | DeletedFinalStateUnknown) -> None:
        if self.delete_func is not None:
            self.delete_func(obj)


@dataclass(frozen=True, slots=True)
class ResourceEventHandlerDetailedFuncs:
    """Like :class:`ResourceEventHandlerFuncs` but ``add_func(obj, is_in_initial_list)``."""

    add_func: Callable[[RawObject, bool], None] | None = None
    update_func: Callable[[RawObject, RawObject], None] | None = None
    delete_func: Callable[[RawObject | DeletedFinalStateUnknown], None] | None = None

    def on_add(self, obj: RawObject, is_in_initial_list: bool) -> None:
        if self.add_func is not None:
            self.add_func(obj, is_in_initial_list)

    def on_update(self, old: RawObject, new: RawObject) -> None:
        if self.update_func is not None:
            self.update_func(old, new)

    def on_delete(self, obj: RawObject | DeletedFinalStateUnknown) -> None:
        if self.delete_func is not None:
            self.delete_func(obj)


# (kind, a, b, is_in_initial_list); tuples are the cheapest notification record.
_Notification = tuple[int, object, object, bool]


class ProcessorListener:
    """One handler's buffer and delivery thread (internal; see module docstring)."""

    __slots__ = ("_buffer", "_cond", "_errors", "_informer_synced", "_initial_pending",
                 "_stopped", "_thread", "_waiting", "handler", "next_resync", "resync_period")

    def __init__(self, handler: ResourceEventHandler, resync_period: float,
                 informer_synced: Callable[[], bool], now: float) -> None:
        self.handler = handler
        self.resync_period = resync_period
        self.next_resync = now + resync_period
        self._informer_synced = informer_synced
        self._cond = threading.Condition(threading.Lock())
        self._buffer: deque[_Notification] = deque()
        self._waiting = False
        self._stopped = False
        self._initial_pending = 0
        self._thread: threading.Thread | None = None
        self._errors = ErrorLog(log)  # a handler bug hit by every event: few tracebacks

    def add(self, n: _Notification) -> None:
        with self._cond:
            self._buffer.append(n)
            if n[3]:
                self._initial_pending += 1
            if self._waiting:
                self._cond.notify()

    def has_synced(self) -> bool:
        with self._cond:
            pending = self._initial_pending
        return pending == 0 and self._informer_synced()

    def start(self, name: str) -> None:
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def pending(self) -> int:
        with self._cond:
            return len(self._buffer)

    def _run(self) -> None:
        handler = self.handler
        while True:
            with self._cond:
                while not self._buffer and not self._stopped:
                    self._waiting = True
                    self._cond.wait()
                    self._waiting = False
                if self._stopped:
                    return
                batch = self._buffer
                self._buffer = deque()
            initial_done = 0
            try:
                for kind, a, b, initial in batch:
                    try:
                        if kind == _UPDATE:
                            handler.on_update(a, b)  # type: ignore[arg-type]
                        elif kind == _ADD:
                            handler.on_add(a, initial)  # type: ignore[arg-type]
                        else:
                            handler.on_delete(a)  # type: ignore[arg-type]
                    except Exception as err:
                        self._errors.failure("event handler failed", err,
                                             handler=type(handler).__name__)
                    if initial:
                        initial_done += 1
                    if self._stopped:
                        return
            finally:
                if initial_done:
                    with self._cond:
                        self._initial_pending -= initial_done


class ResourceEventHandlerRegistration:
    """Handle returned by ``add_event_handler``; pass it to ``remove_event_handler``."""

    __slots__ = ("_listener",)

    def __init__(self, listener: ProcessorListener) -> None:
        self._listener = listener

    def has_synced(self) -> bool:
        """True once the informer synced and this handler processed its initial adds."""
        return self._listener.has_synced()

    @property
    def handler(self) -> ResourceEventHandler:
        return self._listener.handler


class SharedProcessor:
    """Fans notifications out to listeners (internal)."""

    __slots__ = ("_listeners", "_lock", "_syncing")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[ProcessorListener] = []
        self._syncing: list[ProcessorListener] = []

    def add_listener(self, listener: ProcessorListener) -> None:
        with self._lock:
            self._listeners = [*self._listeners, listener]

    def remove_listener(self, listener: ProcessorListener) -> bool:
        with self._lock:
            if listener not in self._listeners:
                return False
            self._listeners = [x for x in self._listeners if x is not listener]
            self._syncing = [x for x in self._syncing if x is not listener]
            return True

    def listeners(self) -> list[ProcessorListener]:
        return self._listeners

    def distribute(self, n: _Notification, sync: bool) -> None:
        # Copy-on-write lists: reading the attribute is atomic, no lock on the hot path.
        for listener in self._syncing if sync else self._listeners:
            listener.add(n)

    def should_resync(self, now: float) -> bool:
        """Pick the listeners whose resync is due; True when any is."""
        with self._lock:
            due = []
            for listener in self._listeners:
                if listener.resync_period > 0 and now >= listener.next_resync:
                    due.append(listener)
                    listener.next_resync = now + listener.resync_period
            self._syncing = due
            return bool(due)
