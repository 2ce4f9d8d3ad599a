"""Quarantine: a stored object that does not decode into its kind is kept as a stand-in.

Contract (used by :mod:`pyctrl.cache.typed`; the stand-ins live in the typed informer's
:class:`~pyctrl.cache.store.Indexer` like any object):

* :class:`Quarantined` is the stand-in: the object's ``apiVersion``, ``kind`` and metadata
  (decoded with the kind's own metadata class, so keys, owner references, labels, handlers
  and events read it as they read the kind), plus where the decode failed (``path``, e.g.
  ``$.spec.concurrencyPolicy``) and why (``problem``). It has no spec or status.
  :meth:`Quarantined.error` is the :class:`pyctrl.errors.Undecodable` a lister's ``get``
  raises for it. :func:`is_quarantined` tells a stand-in from an object.
* :class:`StandIns` makes them for one kind: :meth:`StandIns.make` from the object's JSON and
  msgspec's validation error. An object whose metadata itself does not decode into the
  kind's metadata class has no usable key: ``make`` returns None and the caller drops it
  (logged). Each stand-in is logged once per object and resourceVersion (a relist of the
  same stored object logs nothing new); the memory of what was logged is bounded.
* :func:`undecodable_collector` is the Prometheus gauge
  ``pyctrl_informer_undecodable_objects{resource, kind}``: the stand-ins cached now, summed
  over the typed informers of a factory, read at scrape time.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

import msgspec
import structlog
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from pyctrl.errors import Undecodable
from pyctrl.kube.body import json_decoder

__all__ = ["Quarantined", "StandIns", "is_quarantined", "split_error",
           "undecodable_collector"]

log = structlog.get_logger(__name__)

M = TypeVar("M")

# Keys whose logged resourceVersion is remembered; past this the memory starts over (a log
# line again per stand-in, at worst).
_LOGGED_MAX = 4096


class Quarantined(msgspec.Struct, kw_only=True, gc=False):
    """A cached object that does not decode into its kind (module docstring)."""

    api_version: str = ""
    kind: str = ""
    metadata: Any
    path: str
    problem: str

    def error(self) -> Undecodable:
        """The :class:`~pyctrl.errors.Undecodable` that stands for this object."""
        md = self.metadata
        return Undecodable(kind=self.kind, api_version=self.api_version,
                           namespace=md.namespace, name=md.name, path=self.path,
                           problem=self.problem, resource_version=md.resource_version,
                           uid=md.uid, generation=md.generation)


def is_quarantined(obj: object) -> bool:
    """Whether ``obj`` is a stand-in (:class:`Quarantined`)."""
    return type(obj) is Quarantined


class _Head(msgspec.Struct, Generic[M], kw_only=True, rename="camel"):
    api_version: str = ""
    kind: str = ""
    metadata: M


def split_error(err: msgspec.ValidationError) -> tuple[str, str]:
    """msgspec's ``"<problem> - at `<path>`"`` as ``(path, problem)`` (``$``: the root)."""
    text = str(err)
    problem, sep, path = text.rpartition(" - at `")
    if not sep:
        return "$", text
    return path.removesuffix("`"), problem


def _metadata_type(cls: type[Any]) -> Any:
    """The type of ``cls``'s metadata: a Struct's field, else its ``metadata`` property's
    return annotation (an Unstructured's ObjectMeta)."""
    if issubclass(cls, msgspec.Struct):
        return next((f.type for f in msgspec.structs.fields(cls) if f.name == "metadata"),
                    dict[str, Any])
    prop = getattr(cls, "metadata", None)
    if isinstance(prop, property) and prop.fget is not None:
        return typing.get_type_hints(prop.fget).get("return", dict[str, Any])
    return dict[str, Any]


class StandIns:
    """Stand-ins for one kind class (module docstring)."""

    def __init__(self, cls: type[Any]) -> None:
        self._kind = getattr(getattr(cls, "__kind__", None), "kind", cls.__name__)
        self._head = json_decoder(_Head[_metadata_type(cls)])  # type: ignore[misc]
        self._logged: dict[tuple[str, str], str] = {}

    def make(self, raw: bytes | msgspec.Raw, err: msgspec.ValidationError
             ) -> Quarantined | None:
        """The stand-in for the object ``raw`` that failed with ``err``; None if unkeyable."""
        path, problem = split_error(err)
        try:
            head = self._head.decode(raw)
            md = head.metadata
            key, rv = (md.namespace, md.name), md.resource_version
        except (msgspec.DecodeError, AttributeError):
            log.error("undecodable object without readable metadata dropped",
                      kind=self._kind, path=path, problem=problem)
            return None
        if self._logged.get(key) != rv:
            if len(self._logged) >= _LOGGED_MAX:
                self._logged.clear()
            self._logged[key] = rv
            log.warning("object does not decode into its kind; cached as undecodable",
                        kind=self._kind, namespace=key[0], name=key[1],
                        resource_version=rv, path=path, problem=problem)
        return Quarantined(api_version=head.api_version, kind=head.kind, metadata=md,
                           path=path, problem=problem)


class _UndecodableCollector(Collector):
    def __init__(self, sources: Callable[[], Iterable[tuple[str, str, int]]]) -> None:
        self._sources = sources

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "pyctrl_informer_undecodable_objects",
            "Cached objects that do not decode into their kind (kept as stand-ins), "
            "by resource and kind.", labels=["resource", "kind"])
        totals: dict[tuple[str, str], int] = {}
        for resource, kind, count in self._sources():
            totals[(resource, kind)] = totals.get((resource, kind), 0) + count
        for (resource, kind), count in sorted(totals.items()):
            family.add_metric([resource, kind], count)
        yield family


def undecodable_collector(sources: Callable[[], Iterable[tuple[str, str, int]]]) -> Collector:
    """The gauge of module docstring over ``sources() -> (resource, kind, stand-ins)``
    triples (one per typed informer; several of one resource are summed)."""
    return _UndecodableCollector(sources)
