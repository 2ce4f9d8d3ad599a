"""GC pause metrics: how long CPython's cyclic collector stopped the process, per generation.

Contract: :func:`gc_pause_histogram` registers, once per registry, the histogram
``python_gc_duration_seconds{generation="0"|"1"|"2"}`` (Go's ``go_gc_duration_seconds`` in
spirit: prometheus_client's own GC collector counts collections but not their time). Every
collection in the process, from any thread and including explicit ``gc.collect()`` calls, is
observed into every live registry's histogram. A full collection holds the GIL, so its
duration is a pause of every thread.

Mechanics: one module-level callback in ``gc.callbacks``, installed on first use, times the
"start"/"stop" pair on the process's real monotonic clock (:class:`pyctrl.clock.RealClock`:
a pause is real time whatever clock the components were given; collections never nest, the
collector is not re-entrant) and observes into the histograms held, weakly, in a tuple that
writers replace whole under a lock (copy on write). The callback takes no lock: a collection
can start inside any allocation, including one made while that lock is held. A dropped
registry stops being fed, and ``gc.callbacks`` never grows with the number of registries.
Cost: two clock reads and one observe per live registry per collection (young collections
run every ~700 allocations of container objects).

:func:`register_runtime_collectors` puts on a registry, once each, the histogram above and
prometheus_client's ``process_*``, ``python_gc_*`` and ``python_info`` collectors (the
default registry has those already).
"""

from __future__ import annotations

import contextlib
import gc
import threading
import weakref
from typing import Any

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)

from pyctrl.clock import RealClock
from pyctrl.collectors import per_registry

__all__ = ["GC_PAUSE_BUCKETS", "gc_pause_histogram", "live_sinks",
           "register_runtime_collectors"]

# 50 us .. 2.5 s: young collections take tens of microseconds, a full one of a 10k-object
# cache hundreds of milliseconds.
GC_PAUSE_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                    0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

_lock = threading.Lock()
_sinks: tuple[weakref.ref[Histogram], ...] = ()  # replaced whole, never mutated
_installed = False
_started = 0.0
_CLOCK = RealClock()


def _on_gc(phase: str, info: dict[str, Any]) -> None:
    global _started
    if phase == "start":
        _started = _CLOCK.monotonic()
        return
    elapsed = _CLOCK.monotonic() - _started
    generation = str(info.get("generation", ""))
    for ref in _sinks:
        histogram = ref()
        if histogram is not None:
            histogram.labels(generation=generation).observe(elapsed)


def _install() -> None:
    global _installed
    with _lock:
        if not _installed:
            gc.callbacks.append(_on_gc)
            _installed = True


def _new_histogram(registry: CollectorRegistry | None) -> Histogram:
    histogram = Histogram(
        "python_gc_duration_seconds",
        "Time the cyclic garbage collector held the process (all threads wait), by generation.",
        ["generation"], buckets=GC_PAUSE_BUCKETS, registry=registry,
    )
    if registry is not None:
        _install()
        global _sinks
        with _lock:
            _sinks = (*(r for r in _sinks if r() is not None), weakref.ref(histogram))
    return histogram


# The GC pause histogram of a registry (see the module docstring).
gc_pause_histogram = per_registry(_new_histogram)


def live_sinks() -> int:
    """How many registries' histograms the callback still feeds (for tests)."""
    return sum(1 for r in _sinks if r() is not None)


def register_runtime_collectors(registry: CollectorRegistry) -> None:
    """process_*, python_gc_* (with python_gc_duration_seconds) and python_info on
    ``registry``, each once per registry."""
    gc_pause_histogram(registry)
    if registry is REGISTRY:  # the default registry has the others already
        return
    for make in (lambda: ProcessCollector(registry=registry),
                 lambda: GCCollector(registry=registry),
                 lambda: PlatformCollector(registry=registry)):
        with contextlib.suppress(ValueError):  # already registered on this registry
            make()
