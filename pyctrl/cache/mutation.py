"""Cache hygiene: the default transform and the debug mutation detector.

Contract:

* :func:`drop_managed_fields` is the default informer transform: it removes
  ``metadata.managedFields`` (often half an object's bytes, never needed by controllers) and
  interns the namespace string so 10k objects share one copy. It mutates and returns the
  object it is given (a freshly decoded one), and is idempotent.
* :class:`CacheMutationDetector` (client-go's ``cacheMutationDetector``): when enabled it
  keeps a deep copy of every object entering the cache and compares them later. Objects in the
  cache are shared with every handler and lister caller and must never be changed in place;
  a difference means someone did. ``compare_objects()`` reports each mutated key via the log
  and raises :class:`CacheMutationError` (or only logs, with ``raise_on_mutation=False``).
  It is meant for tests and debugging: it doubles memory and costs a deep copy per event.
  Enable with the informer's ``detect_mutations=True`` or ``PYCTRL_CACHE_MUTATION_DETECTOR=1``.
"""

from __future__ import annotations

import copy
import os
import sys
import threading

import structlog

from pyctrl.kube.interface import RawObject

__all__ = [
    "MUTATION_DETECTOR_ENV",
    "CacheMutationDetector",
    "CacheMutationError",
    "drop_managed_fields",
    "mutation_detection_enabled",
]

log = structlog.get_logger(__name__)

MUTATION_DETECTOR_ENV = "PYCTRL_CACHE_MUTATION_DETECTOR"


def drop_managed_fields(obj: RawObject) -> RawObject:
    """Drop ``metadata.managedFields`` and intern the namespace (see module docstring)."""
    md = obj.get("metadata")
    if md is not None:
        md.pop("managedFields", None)
        ns = md.get("namespace")
        if ns is not None:
            md["namespace"] = sys.intern(ns)
    return obj


def mutation_detection_enabled() -> bool:
    """True when ``PYCTRL_CACHE_MUTATION_DETECTOR`` is set to 1/true/yes."""
    return os.environ.get(MUTATION_DETECTOR_ENV, "").lower() in ("1", "true", "yes")


class CacheMutationError(AssertionError):
    """A cached object was changed in place by someone holding a reference to it."""


class CacheMutationDetector:
    """Remembers deep copies of cached objects and detects in-place changes."""

    def __init__(self, name: str = "", *, raise_on_mutation: bool = True) -> None:
        self._name = name
        self._raise = raise_on_mutation
        self._lock = threading.Lock()
        # id(obj) -> (obj, copy). Holding obj keeps its id stable while we track it.
        self._tracked: dict[int, tuple[RawObject, RawObject]] = {}
        self.mutations: list[str] = []

    def add_object(self, obj: RawObject) -> None:
        """Start tracking ``obj`` (called as it enters the cache)."""
        snapshot = copy.deepcopy(obj)
        with self._lock:
            self._tracked[id(obj)] = (obj, snapshot)

    def release_object(self, obj: RawObject) -> None:
        """Check ``obj`` one last time and stop tracking it (it left the cache)."""
        with self._lock:
            entry = self._tracked.pop(id(obj), None)
        if entry is not None and entry[0] != entry[1]:
            self._report([entry])

    def compare_objects(self) -> None:
        """Compare every tracked object with its copy; report differences."""
        with self._lock:
            entries = list(self._tracked.values())
        self._report([e for e in entries if e[0] != e[1]])

    def _report(self, bad: list[tuple[RawObject, RawObject]]) -> None:
        if not bad:
            return
        keys = []
        for obj, _ in bad:
            md = obj.get("metadata") or {}
            keys.append(f"{md.get('namespace', '')}/{md.get('name', '')}")
        self.mutations.extend(keys)
        log.error("cached objects were mutated", informer=self._name, keys=keys)
        if self._raise:
            raise CacheMutationError(f"cached objects were mutated: {keys}")
