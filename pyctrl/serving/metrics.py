"""Metric families shared per Prometheus registry, and the handler that exposes a registry.

Contract: :func:`metrics_handler` serves a registry at ``/metrics`` (404 elsewhere) through
prometheus_client's own exposition: the format the ``Accept`` header asks for
(``choose_encoder``: OpenMetrics 1.0 for ``application/openmetrics-text``, else the Prometheus
text format 0.0.4), gzip-compressed when ``Accept-Encoding`` lists ``gzip`` (with
``Content-Encoding: gzip``), ``?name[]=<family>`` restricting the answer to those families as
prometheus_client's own server does; every answer says ``Vary: Accept, Accept-Encoding``.

:func:`per_registry` turns a factory that registers collectors on a
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

This module imports only ``prometheus_client`` and :mod:`pyctrl.serving.http`'s types (which
import no other pyctrl module): every layer (``pyctrl.kube`` included) may use it.
"""

from __future__ import annotations

import gzip
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted

from pyctrl.serving.http import TEXT, Handler, Response

__all__ = ["PerRegistry", "metrics_handler", "per_registry"]

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


def metrics_handler(registry: CollectorRegistry) -> Handler:
    """Serve ``registry`` at ``/metrics``, negotiated as the module docstring says."""

    def handle(path: str, query: dict[str, list[str]], headers: Mapping[str, str]) -> Response:
        if path.rstrip("/") != "/metrics":
            return 404, TEXT, b"not found\n"
        encoder, content_type = choose_encoder(headers.get("accept", ""))
        names = query.get("name[]")
        body = encoder(registry.restricted_registry(names) if names else registry)
        vary = ("Vary", "Accept, Accept-Encoding")
        if gzip_accepted(headers.get("accept-encoding", "")):
            return 200, content_type, gzip.compress(body), (("Content-Encoding", "gzip"), vary)
        return 200, content_type, body, (vary,)

    return handle
