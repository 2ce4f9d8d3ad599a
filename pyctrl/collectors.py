"""Metric families shared per Prometheus registry: :func:`per_registry`.

Contract: :func:`per_registry` turns a factory that registers collectors on a
``prometheus_client.CollectorRegistry`` into a getter that calls the factory once per
registry and hands every later caller with the same registry the same result (a registry
refuses a second collector of the same name, and several queues, clients or controllers in
one process share one registry). ``None`` means "no registry": each call then returns fresh,
unregistered collectors (``registry=None`` in prometheus_client), so callers may count
without exporting.

Invariants: results are keyed by the registry object itself, weakly, so a dropped registry
frees its collectors, and a new registry that happens to reuse a dead one's address is never
handed collectors registered elsewhere (which an ``id()`` key would do). The first use of a
registry is serialised by a lock, so two threads never both register the same names.

Layer: the bottom one (beside :mod:`pyctrl.clock` and :mod:`pyctrl.errors`). It imports only
``prometheus_client``, so every package may use it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry

__all__ = ["PerRegistry", "per_registry"]

T = TypeVar("T")


class PerRegistry(Generic[T]):
    """What :func:`per_registry` returns: call it with a registry (or ``None``)."""

    def __init__(self, factory: Callable[[CollectorRegistry | None], T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._by_registry: weakref.WeakKeyDictionary[CollectorRegistry, T] = (
            weakref.WeakKeyDictionary()
        )

    def __call__(self, registry: CollectorRegistry | None) -> T:
        """The collectors of ``registry`` (made on its first use), or private unregistered
        ones when ``registry`` is ``None``."""
        if registry is None:
            return self._factory(None)
        with self._lock:
            found = self._by_registry.get(registry)
            if found is None:
                found = self._factory(registry)
                self._by_registry[registry] = found
            return found


def per_registry(factory: Callable[[CollectorRegistry | None], T]) -> PerRegistry[T]:
    """Wrap ``factory`` (which registers its collectors on the registry it is given) so it
    runs once per registry; see the module docstring."""
    return PerRegistry(factory)
