"""Reflector: keep a store in step with the API server by LIST then WATCH (client-go's).

Contract:

* ``run(stop)`` loops until ``stop`` is set: a (paged) LIST whose items go to
  ``store.replace(items, rv)``, then WATCHes from the last seen resourceVersion with
  bookmarks on, feeding ``store.add/update/delete``. Every event and bookmark advances
  ``last_sync_resource_version()``.
* LIST resourceVersion: the first list uses ``initial_list_resource_version``, default ""
  (a consistent read, paged). client-go uses "0" (whatever the watch cache holds), which the
  server answers in one unpaged response; decoding that whole response at once leaves the
  dropped managedFields scattered between the kept objects and nearly doubles RSS per cached
  object, so pyctrl pays for an etcd read instead (pass "0" to get client-go's behaviour).
  A relist uses the last synced version, and "" (a consistent read) when that version is known
  to be unavailable (410/Expired, or a watch from a just-listed version expiring). A 410 on
  a LIST at a version retries at once with "". The LIST itself (which lists are paged, pages
  prefetched, a 410 between pages, transform and streaming per page) is
  :func:`pyctrl.cache.pager.list_all`'s contract.
* A watch that ends cleanly is reopened at once from the last version. 410 Gone (on open
  or as an in-stream ERROR event, or a "too old resource version" message) means the version
  was compacted: LIST again. 429/5xx/transport errors back off (0.8 s doubling to 30 s,
  jittered, reset after 2 healthy minutes) and re-WATCH from the last version; other API
  errors (403, 404, ...) back off and LIST again.
* A failed list-and-watch is logged, with the delay before the retry, and the backoffs are
  :mod:`pyctrl.cache.retries`'s contract. 404 (NotFound) on LIST means the resource itself
  is not served (a CRD not installed, a misspelled group/version/resource): the backoff grows
  to its cap while it persists, and the store never syncs (so readiness built on
  ``has_synced`` stays false).
* ``watch_list=True`` (client-go's WatchListClient, KEP-3157) syncs by a streaming list
  instead of a LIST: one WATCH with ``sendInitialEvents`` from the version a LIST would ask
  for, whose initial events up to the ``k8s.io/initial-events-end`` bookmark become the
  ``replace`` (streamed to a ``stream_initial`` store in ``page_size`` batches; see
  :mod:`pyctrl.cache.watchlist`), after which the same stream goes on as the watch. A 410 on
  a non-empty version retries at once with "" (a consistent read); other failures are the
  list-and-watch's (logged, backed off, retried as a watch-list). A server that refuses the
  request (the WatchList feature gate off, or older than it) or ignores it (an ordinary
  bookmark first), or a lister without ``watch_list``, turns it off for this reflector: one
  warning, and paged LISTs from then on (at once, in the same attempt).
* ``transform`` (optional) is applied to every listed object page by page, and to every
  watched object, before the store sees it (see :mod:`pyctrl.cache.mutation`).
* A store with ``stream_initial`` (the DeltaFIFO) gets each page of the first list as soon as
  it is transformed, so the informer stores the first pages while the next ones are
  fetched; ``replace`` still follows with the whole list (see
  :mod:`pyctrl.cache.delta_fifo`). Once ``stream_initial`` declines a page (any later list),
  the rest of that list goes only to ``replace``. Python's cyclic garbage collector is
  paused (:func:`pyctrl.kube.body.gc_paused`) while the store's ``replace`` runs.
* Each watch asks the server to end it after a random ``[min_watch_timeout,
  max_watch_timeout]`` seconds so clients spread out. A watchdog
  (:mod:`pyctrl.cache.watchdog`) closes a watch that has delivered nothing (not even a
  bookmark) for ``watch_silence_timeout`` seconds (default ``max_watch_timeout + 60``: a
  healthy server either sends bookmarks about every minute or closes the watch at its
  timeout, so that much silence means a dead connection).
* ``stop`` closes the open watch promptly; the reflector's threads exit before ``run``
  returns. An in-flight LIST is not interruptible: ``run`` returns once it finishes.
* Time comes only from the injected clock.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

import structlog

from pyctrl.cache.keys import DeletedFinalStateUnknown
from pyctrl.cache.listwatch import ListerWatcher
from pyctrl.cache.pager import Stopped, is_expired, list_all
from pyctrl.cache.retries import Retries, retryable
from pyctrl.cache.watchdog import WatchDog
from pyctrl.cache.watchlist import initial_events, rejects_watch_list
from pyctrl.clock import Clock, RealClock
from pyctrl.errors import ApiError, ServerError, TooManyRequests, from_status
from pyctrl.kube import meta
from pyctrl.kube.body import gc_paused
from pyctrl.kube.interface import RawObject, WatchEvent, WatchStream

__all__ = ["Reflector", "ReflectorStore"]

log = structlog.get_logger(__name__)

# A watch that ends cleanly this fast with no events is treated as a failure (back off).
_SHORT_WATCH_SECONDS = 1.0


class ReflectorStore(Protocol):
    """The writes a Reflector makes (a DeltaFIFO or a plain Indexer)."""

    def add(self, obj: RawObject) -> None: ...

    def update(self, obj: RawObject) -> None: ...

    def delete(self, obj: RawObject | DeletedFinalStateUnknown) -> None: ...

    def replace(self, objs: Iterable[RawObject], resource_version: str = "") -> None: ...


class _Relist(Exception):
    pass


# An open watch: the stream, its one event iterator, and when it was opened.
_Opened = tuple[WatchStream, Iterator[WatchEvent], float]


class Reflector:
    """LIST+WATCH one resource into a store (see module docstring)."""

    def __init__(self, lw: ListerWatcher, store: ReflectorStore, *, name: str = "",
                 clock: Clock | None = None, page_size: int = 500,
                 min_watch_timeout: float = 300.0, max_watch_timeout: float = 600.0,
                 watch_silence_timeout: float | None = None,
                 backoff_initial: float = 0.8, backoff_max: float = 30.0,
                 backoff_reset: float = 120.0, backoff_jitter: float = 1.0,
                 initial_list_resource_version: str = "",
                 transform: Callable[[RawObject], RawObject] | None = None,
                 rand: random.Random | None = None, watch_list: bool = False) -> None:
        if min_watch_timeout <= 0 or max_watch_timeout < min_watch_timeout:
            raise ValueError("need 0 < min_watch_timeout <= max_watch_timeout")
        self.name = name or "reflector"
        self._lw = lw
        self._store = store
        self._clock: Clock = clock or RealClock()
        self._page_size = page_size
        self._min_watch = min_watch_timeout
        self._max_watch = max_watch_timeout
        self._watchdog = WatchDog(self._clock, watch_silence_timeout
                                  if watch_silence_timeout is not None
                                  else max_watch_timeout + 60.0)
        self._rand = rand or random.Random()
        self._retries = Retries(self._clock, log, self.name, initial=backoff_initial,
                                maximum=backoff_max, reset_after=backoff_reset,
                                jitter=backoff_jitter, rand=self._rand)
        self._last_rv = ""
        self._initial_rv = initial_list_resource_version
        self._transform = transform
        self._rv_unavailable = False
        self._watch_list = watch_list

    # -- public ---------------------------------------------------------------------------
    def last_sync_resource_version(self) -> str:
        """The resourceVersion of the last LIST, event or bookmark applied."""
        return self._last_rv

    def run(self, stop: threading.Event) -> None:
        """LIST and WATCH until ``stop`` is set (see module docstring)."""
        watchdog = threading.Thread(target=self._watchdog.run, args=(stop,),
                                    name=f"{self.name}-watchdog", daemon=True)
        watchdog.start()
        try:
            while not stop.is_set():
                try:
                    self.list_and_watch(stop)
                except Stopped:
                    break
                except Exception as err:
                    delay = self._retries.delay_after(err)
                    self._retries.log_failure(err, delay, self._lw)
                else:
                    delay = self._retries.after_clean_end()
                if stop.is_set():
                    break
                self._clock.sleep(delay, stop)
        finally:
            watchdog.join()

    def list_and_watch(self, stop: threading.Event) -> None:
        """One LIST (or watch-list), then WATCHes until a relist is needed (returns) or a
        hard error."""
        opened = self._sync(stop)
        listed_rv = self._last_rv
        while not stop.is_set():
            first, opened = opened, None
            try:
                self._watch_once(stop, first)
            except _Relist:
                return
            except Stopped:
                raise
            except Exception as err:
                if is_expired(err):
                    log.info("watch expired, relisting", reflector=self.name, error=str(err))
                    if self._last_rv == listed_rv:
                        # Even the version we just listed is too old to watch from: the
                        # next LIST must be a consistent read, not "at least this version".
                        self._rv_unavailable = True
                    return
                if not retryable(err):
                    raise
                delay = self._retries.delay_after(err)
                if isinstance(err, TooManyRequests) and err.retry_after:
                    delay = max(delay, err.retry_after)
                self._retries.log_watch_failure(err, delay)
                if self._clock.sleep(delay, stop):
                    raise Stopped from None

    # -- LIST or watch-list ----------------------------------------------------------------
    def _sync(self, stop: threading.Event) -> _Opened | None:
        """Fill the store: by watch-list (returning its open stream) when on, else LIST."""
        if self._watch_list:
            opened = self._watch_list_sync(stop)
            if opened is not None:
                return opened
        self._list(stop)
        return None

    def _watch_list_off(self, reason: str) -> None:
        self._watch_list = False
        log.warning("watch-list not supported, syncing with paged LIST from now on",
                    reflector=self.name, reason=reason)

    def _watch_list_sync(self, stop: threading.Event) -> _Opened | None:
        """A watch-list into the store; None (and watch-list off) if the server or lister
        cannot do it."""
        watch_list = getattr(self._lw, "watch_list", None)
        if watch_list is None:
            self._watch_list_off("the lister has no watch_list")
            return None
        rv = self._relist_resource_version()
        while True:
            if stop.is_set():
                raise Stopped
            started = self._clock.monotonic()
            try:
                stream: WatchStream = watch_list(resource_version=rv,
                                                 timeout_seconds=self._watch_timeout())
            except ApiError as err:
                if rejects_watch_list(err):
                    self._watch_list_off(str(err))
                    return None
                if rv == "" or not is_expired(err):
                    raise
                self._rv_unavailable, rv = True, ""  # that version is gone: a consistent one
                continue
            break
        dog = self._watchdog
        dog.opened(stream, started)
        events = iter(stream)
        try:
            clock = self._clock

            def on_event() -> None:
                dog.last_activity = clock.monotonic()
                if stop.is_set():
                    raise Stopped

            synced = initial_events(events, transform=self._transform,
                                    stream_to=getattr(self._store, "stream_initial", None),
                                    batch_size=self._page_size, on_event=on_event)
        except BaseException:
            dog.closed(stream)
            if stop.is_set():
                raise Stopped from None
            raise
        if synced is None:
            dog.closed(stream)
            self._watch_list_off("the server sent an ordinary bookmark first: it ignores "
                                 "sendInitialEvents")
            return None
        items, synced_rv = synced
        self._rv_unavailable = False
        with gc_paused():
            self._store.replace(items, synced_rv)
        self._last_rv = synced_rv
        log.debug("watch-listed", reflector=self.name, items=len(items),
                  resource_version=synced_rv)
        return stream, events, started

    def _relist_resource_version(self) -> str:
        if self._rv_unavailable:
            return ""
        return self._last_rv or self._initial_rv

    def _list(self, stop: threading.Event) -> None:
        rv = self._relist_resource_version()
        try:
            items, list_rv = self._paged_list(rv, stop)
        except Exception as err:
            if rv == "" or not is_expired(err):
                raise
            # The version we asked for is gone: fall back to a consistent read.
            self._rv_unavailable = True
            items, list_rv = self._paged_list("", stop)
        self._rv_unavailable = False
        with gc_paused():
            self._store.replace(items, list_rv)
        self._last_rv = list_rv
        log.debug("listed", reflector=self.name, items=len(items), resource_version=list_rv)

    def _paged_list(self, rv: str, stop: threading.Event) -> tuple[list[RawObject], str]:
        # The first list's pages go to the store as they arrive, when it takes them.
        return list_all(self._lw, rv, page_size=self._page_size, transform=self._transform,
                        stream_to=getattr(self._store, "stream_initial", None), stop=stop,
                        name=self.name)

    # -- WATCH ------------------------------------------------------------------------------
    def _watch_timeout(self) -> int:
        return int(self._min_watch + self._rand.random() * (self._max_watch - self._min_watch))

    def _watch_once(self, stop: threading.Event, opened: _Opened | None = None) -> None:
        if opened is None:
            started = self._clock.monotonic()
            stream = self._lw.watch(resource_version=self._last_rv,
                                    timeout_seconds=self._watch_timeout(),
                                    allow_watch_bookmarks=True)
            self._watchdog.opened(stream, started)
            events = iter(stream)
        else:  # the watch-list's stream, past its initial events
            stream, events, started = opened
        if stop.is_set():
            stream.close()
        try:
            count = self._handle_stream(events, stop)
        except Exception:
            if not self._watchdog.silenced():
                raise
            count = -1
        finally:
            self._watchdog.closed(stream)
        if stop.is_set():
            raise Stopped
        if self._watchdog.silenced():
            log.warning("watch was silent too long, restarting", reflector=self.name,
                        silence_seconds=self._watchdog.silence)
            return
        if count == 0 and self._clock.monotonic() - started < _SHORT_WATCH_SECONDS:
            raise ServerError("very short watch: ended with no events", 0, "ShortWatch")

    def _handle_stream(self, events: Iterator[WatchEvent], stop: threading.Event) -> int:
        store = self._store
        clock = self._clock
        dog = self._watchdog
        transform = self._transform
        count = 0
        for event in events:
            dog.last_activity = clock.monotonic()
            if stop.is_set():
                break
            etype = event.get("type")
            obj = event.get("object") or {}
            if etype == "ERROR":
                code = obj.get("code") or 500
                raise from_status(int(code), obj)
            if transform is not None and etype != "BOOKMARK":
                obj = transform(obj)
            if etype == "ADDED":
                store.add(obj)
            elif etype == "MODIFIED":
                store.update(obj)
            elif etype == "DELETED":
                store.delete(obj)
            elif etype != "BOOKMARK":
                log.warning("unknown watch event type", reflector=self.name, type=etype)
                continue
            rv = meta.resource_version(obj)
            if rv:
                self._last_rv = rv
            count += 1
        return count
