"""Garbage-collector tuning once the caches are full (the reasons: docs/DESIGN.md, "Numbers
behind the defaults").

Contract:

* :class:`GCOptions` (frozen, validated): ``freeze_after_sync`` runs one full collection and
  then ``gc.freeze()`` once every informer has synced, moving everything alive
  then (the caches' first fill, the imported modules) to the permanent generation that later
  collections skip. Objects frozen are still freed by reference counting when the cache drops
  them; only garbage cycles among them would stay (the caches make none).
  ``gen0_threshold`` (default None: Python's own, 700) sets the first generation's threshold
  at the same moment (the older generations' thresholds are kept): a larger one means fewer
  young collections during bursts of allocation. Both default to off in the library (the
  collector is process-wide: a library should not retune its host process unasked); the
  CronJob controller turns the freeze on (``--gc-freeze``, default true).
* :func:`tune_after_sync` waits (on ``stop``'s real-time wait, polling ``synced``) until
  ``synced()`` is true, applies the options once and returns; it returns without touching
  the collector if ``stop`` is set first. The Manager runs it on a thread of its own
  (``ManagerOptions.gc``); ``cronjob_controller`` exposes both as flags so the two can be
  compared run against run.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from dataclasses import dataclass

import structlog

__all__ = ["GCOptions", "apply", "tune_after_sync"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class GCOptions:
    """How the collector is tuned once the caches synced (see module docstring)."""

    freeze_after_sync: bool = False
    gen0_threshold: int | None = None

    def __post_init__(self) -> None:
        if self.gen0_threshold is not None and self.gen0_threshold < 1:
            raise ValueError("gen0_threshold must be at least 1 (None: Python's default)")

    @property
    def active(self) -> bool:
        """Whether there is anything to do after the sync."""
        return self.freeze_after_sync or self.gen0_threshold is not None


def apply(options: GCOptions) -> None:
    """Tune the collector now (see module docstring)."""
    if options.gen0_threshold is not None:
        _, gen1, gen2 = gc.get_threshold()
        gc.set_threshold(options.gen0_threshold, gen1, gen2)
    if options.freeze_after_sync:
        gc.collect()
        gc.freeze()
    log.info("garbage collector tuned after the initial sync", frozen=gc.get_freeze_count(),
             threshold=list(gc.get_threshold()))


def tune_after_sync(options: GCOptions, synced: Callable[[], bool], stop: threading.Event,
                    poll: float = 0.05) -> None:
    """Apply ``options`` once ``synced()`` is true; nothing if ``stop`` comes first."""
    if not options.active:
        return
    while not synced():
        if stop.wait(poll):
            return
    apply(options)
