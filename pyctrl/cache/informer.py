"""SharedIndexInformer: one LIST+WATCH feeding a shared cache and many handlers.

Contract (client-go ``sharedIndexInformer``):

* ``run(stop)`` blocks until ``stop`` is set. It runs a Reflector into a DeltaFIFO, pops the
  FIFO into the :class:`~pyctrl.cache.store.Indexer` (the cache) and notifies handlers, then
  on stop closes everything and joins every thread it started before returning.
* Objects pass through ``transform`` (default :func:`drop_managed_fields`) before they reach
  the cache. **Objects from the cache, listers and handler callbacks are shared and
  read-only**: deep-copy before changing one. ``detect_mutations=True`` (or
  ``PYCTRL_CACHE_MUTATION_DETECTOR=1``) keeps deep copies and reports in-place changes
  (raw dicts only: a typed informer's frozen objects cannot change, and the factory builds
  those with the detector off).
* Handlers (see :mod:`pyctrl.cache.processor`) each get their own buffer and thread, so a
  slow or failing handler never delays the cache, the reflector or other handlers. A handler
  added after start first receives every cached object as an add (``is_in_initial_list``
  True), with delta processing paused so nothing is missed or duplicated.
* Resync: a handler with a resync period (its own, or the informer's ``resync_period``)
  gets the cache replayed as updates with ``old is new``; no API call is made. Periods below
  1 s are raised to 1 s; a handler added after start cannot resync faster than the
  informer's check period.
* ``has_synced()`` is True once the initial LIST has been fully processed into the cache.
* ``watch_list=True``: the initial state (and every relist) comes from a streaming list
  instead of paged LISTs, falling back to LISTs when the server cannot (see
  :class:`~pyctrl.cache.reflector.Reflector`).
"""

from __future__ import annotations

import contextlib
import threading

import structlog

from pyctrl.cache.delta_fifo import (
    DELETED,
    REPLACED,
    SYNC,
    Delta,
    DeltaFIFO,
    FIFOClosedError,
    TransformFunc,
)
from pyctrl.cache.index import Indexers
from pyctrl.cache.lister import IndexerLister
from pyctrl.cache.listwatch import ListerWatcher
from pyctrl.cache.mutation import (
    CacheMutationDetector,
    CacheMutationError,
    drop_managed_fields,
    mutation_detection_enabled,
)
from pyctrl.cache.processor import (
    _ADD,
    _DELETE,
    _UPDATE,
    ProcessorListener,
    ResourceEventHandler,
    ResourceEventHandlerRegistration,
    SharedProcessor,
)
from pyctrl.cache.reflector import Reflector
from pyctrl.cache.store import Indexer
from pyctrl.clock import Clock, RealClock
from pyctrl.kube import meta
from pyctrl.kube.interface import RawObject

__all__ = ["MIN_RESYNC_PERIOD", "SharedIndexInformer"]

log = structlog.get_logger(__name__)

MIN_RESYNC_PERIOD = 1.0
_MUTATION_CHECK_PERIOD = 10.0


def _rv(obj: RawObject) -> str:
    return meta.resource_version(obj)


class SharedIndexInformer:
    """A shared, indexed cache of one resource kept current by LIST+WATCH."""

    def __init__(self, lw: ListerWatcher, *, resync_period: float = 0.0,
                 indexers: Indexers | None = None,
                 transform: TransformFunc | None = drop_managed_fields,
                 clock: Clock | None = None, name: str = "",
                 detect_mutations: bool | None = None, page_size: int = 500,
                 watch_silence_timeout: float | None = None,
                 initial_list_resource_version: str = "", watch_list: bool = False) -> None:
        self.name = name or "informer"
        self._lw = lw
        self._clock: Clock = clock or RealClock()
        self._transform = transform
        self._default_resync = max(resync_period, MIN_RESYNC_PERIOD) if resync_period > 0 else 0.0
        self._resync_check_period = self._default_resync
        self._page_size = page_size
        self._watch_silence_timeout = watch_silence_timeout
        self._initial_list_rv = initial_list_resource_version
        self._watch_list = watch_list
        self._indexer = Indexer(indexers=indexers)
        self._processor = SharedProcessor()
        self._lock = threading.Lock()
        self._block_deltas = threading.Lock()
        self._sync_cond = threading.Condition(threading.Lock())
        self._synced = False
        self._started = False
        self._stopped = False
        self._fifo: DeltaFIFO | None = None
        self._reflector: Reflector | None = None
        self._handler_seq = 0
        if detect_mutations is None:
            detect_mutations = mutation_detection_enabled()
        self.mutation_detector: CacheMutationDetector | None = (
            CacheMutationDetector(self.name) if detect_mutations else None
        )

    # -- handlers ---------------------------------------------------------------------------
    def add_event_handler(self, handler: ResourceEventHandler,
                          resync_period: float | None = None,
                          ) -> ResourceEventHandlerRegistration:
        """Register ``handler``; returns a registration for ``has_synced``/removal."""
        with self._lock:
            if self._stopped:
                raise RuntimeError(f"informer {self.name} has stopped; handler not added")
            period = self._default_resync if resync_period is None else resync_period
            if period > 0:
                period = max(period, MIN_RESYNC_PERIOD)
                if self._started:
                    if self._resync_check_period <= 0:
                        log.warning("informer started without resync; handler won't resync",
                                    informer=self.name)
                        period = 0.0
                    else:
                        period = max(period, self._resync_check_period)
                elif self._resync_check_period <= 0 or period < self._resync_check_period:
                    self._resync_check_period = period
            listener = ProcessorListener(handler, period, self.has_synced,
                                         self._clock.monotonic())
            if not self._started:
                self._processor.add_listener(listener)
                return ResourceEventHandlerRegistration(listener)
            with self._block_deltas:
                self._processor.add_listener(listener)
                self._start_listener(listener)
                for obj in self._indexer.list():
                    listener.add((_ADD, obj, None, True))
            return ResourceEventHandlerRegistration(listener)

    def remove_event_handler(self, registration: ResourceEventHandlerRegistration) -> None:
        """Stop delivering to the handler and end its thread (pending events are dropped)."""
        listener = registration._listener
        with self._block_deltas:
            removed = self._processor.remove_listener(listener)
        if not removed:
            return
        listener.stop()
        if threading.current_thread() is not getattr(listener, "_thread", None):
            listener.join()

    def _start_listener(self, listener: ProcessorListener) -> None:
        self._handler_seq += 1
        listener.start(f"{self.name}-handler-{self._handler_seq}")

    # -- accessors --------------------------------------------------------------------------
    def get_store(self) -> Indexer:
        return self._indexer

    def get_indexer(self) -> Indexer:
        return self._indexer

    def lister(self) -> IndexerLister:
        return IndexerLister(self._indexer)

    def add_indexers(self, indexers: Indexers) -> None:
        """Add index functions; only allowed before ``run``."""
        with self._lock:
            if self._started:
                raise RuntimeError("informer has already started")
            self._indexer.add_indexers(indexers)

    def has_synced(self) -> bool:
        fifo = self._fifo
        return fifo is not None and fifo.has_synced()

    def is_stopped(self) -> bool:
        return self._stopped

    def last_sync_resource_version(self) -> str:
        reflector = self._reflector
        return reflector.last_sync_resource_version() if reflector is not None else ""

    def wait_for_sync(self, stop: threading.Event, timeout: float | None = None) -> bool:
        """Block until synced (True), or ``stop``/informer exit/``timeout`` (False)."""
        clock = self._clock
        deadline = None if timeout is None else clock.monotonic() + timeout
        with self._sync_cond:
            while not self._synced:
                if stop.is_set() or self._stopped:
                    return False
                wait = 0.1
                if deadline is not None:
                    remaining = deadline - clock.monotonic()
                    if remaining <= 0:
                        return False
                    wait = min(wait, remaining)
                clock.wait(self._sync_cond, wait)
            return True

    # -- running ----------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` is set (see module docstring); joins its threads on exit."""
        with self._lock:
            if self._started:
                raise RuntimeError(f"informer {self.name} was already started")
            if self._stopped:
                return
            self._started = True
            # The reflector applies the transform (page by page, see reflector.py), so the
            # FIFO needs none.
            fifo = DeltaFIFO(known_objects=self._indexer, on_synced=self._mark_synced)
            self._fifo = fifo
            self._reflector = Reflector(
                self._lw, fifo, name=f"{self.name}-reflector", clock=self._clock,
                page_size=self._page_size, watch_silence_timeout=self._watch_silence_timeout,
                initial_list_resource_version=self._initial_list_rv,
                transform=self._transform, watch_list=self._watch_list,
            )
            with self._block_deltas:
                for listener in self._processor.listeners():
                    self._start_listener(listener)
        threads = [
            threading.Thread(target=self._reflector.run, args=(stop,),
                             name=f"{self.name}-reflector", daemon=True),
            threading.Thread(target=self._process_loop, args=(fifo,),
                             name=f"{self.name}-process", daemon=True),
        ]
        if self._resync_check_period > 0:
            threads.append(threading.Thread(target=self._resync_loop, args=(fifo, stop),
                                            name=f"{self.name}-resync", daemon=True))
        if self.mutation_detector is not None:
            threads.append(threading.Thread(target=self._mutation_loop, args=(stop,),
                                            name=f"{self.name}-mutation", daemon=True))
        for t in threads:
            t.start()
        try:
            stop.wait()
        finally:
            with self._lock:
                self._stopped = True
            fifo.close()
            for t in threads:
                t.join()
            with self._block_deltas:
                listeners = self._processor.listeners()
            for listener in listeners:
                listener.stop()
            for listener in listeners:
                listener.join()
            with self._sync_cond:
                self._sync_cond.notify_all()

    def _process_loop(self, fifo: DeltaFIFO) -> None:
        while True:
            try:
                fifo.pop_batch(self._handle_deltas)
            except FIFOClosedError:
                return

    def _mark_synced(self) -> None:
        with self._sync_cond:
            self._synced = True
            self._sync_cond.notify_all()

    def _handle_deltas(self, deltas: list[Delta], is_in_initial_list: bool) -> None:
        # Called by the FIFO with its lock held: must not block.
        indexer = self._indexer
        distribute = self._processor.distribute
        detector = self.mutation_detector
        with self._block_deltas:
            for dtype, obj in deltas:
                if dtype == DELETED:
                    old = indexer.pop(obj)
                    if detector is not None and old is not None:
                        self._release(detector, old)
                    distribute((_DELETE, obj, None, False), False)
                    continue
                old = indexer.add_or_update(obj)  # type: ignore[arg-type]
                if detector is not None and old is not obj:
                    # A Sync delta re-stores the cached object itself: keep its old snapshot.
                    detector.add_object(obj)  # type: ignore[arg-type]
                    if old is not None:
                        self._release(detector, old)
                if old is None:
                    distribute((_ADD, obj, None, is_in_initial_list), False)
                else:
                    sync = dtype == SYNC or (
                        dtype == REPLACED and _rv(old) == _rv(obj)  # type: ignore[arg-type]
                    )
                    distribute((_UPDATE, old, obj, False), sync)

    @staticmethod
    def _release(detector: CacheMutationDetector, old: RawObject) -> None:
        # Already logged and recorded in detector.mutations; never raise into the informer.
        with contextlib.suppress(CacheMutationError):
            detector.release_object(old)

    def _resync_loop(self, fifo: DeltaFIFO, stop: threading.Event) -> None:
        clock = self._clock
        while not clock.sleep(self._resync_check_period, stop):
            if self._processor.should_resync(clock.monotonic()):
                fifo.resync()

    def _mutation_loop(self, stop: threading.Event) -> None:
        detector = self.mutation_detector
        assert detector is not None
        while not self._clock.sleep(_MUTATION_CHECK_PERIOD, stop):
            with contextlib.suppress(CacheMutationError):  # logged by the detector
                detector.compare_objects()

