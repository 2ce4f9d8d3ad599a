"""Typed objects: read a cached raw dict as its API class, write typed status back.

Contract:

* :func:`resource_for` is the :class:`pyctrl.kube.Resource` of a kind's class (for clients,
  informers and the Builder, which stay raw-dict).
* :func:`decode` builds a fresh typed object from a raw dict (the informer's cached object,
  or a watch event's) without copying or changing the dict: it only reads it. Unknown fields
  are ignored by the typed view and remain in the raw dict; nothing the view does reaches the
  cache. It raises :class:`DecodeError` when a known field has the wrong type (the CRD's
  schema normally makes that impossible). Cost: a few microseconds for a CronJob-sized object
  (``python -m bench typed-read``); hot loops that read one field keep using the dict.
* :func:`encode` is the inverse for the declared fields: camelCase keys, fields equal to
  their defaults omitted, ``apiVersion``/``kind`` filled from the class.
* :func:`status_patch` is the JSON merge patch (RFC 7386) that makes ``raw``'s status equal
  the typed ``status`` for the declared fields, and leaves every other field of ``raw``'s
  status alone (so fields written by a newer controller version survive). An unchanged status
  gives an empty patch (``{}``), which callers skip. Lists are replaced whole, as merge
  patches do. With ``resource_version`` the patch carries it as a precondition (409 Conflict
  when someone wrote in between).
* :class:`TypedLister` wraps a raw-dict :class:`pyctrl.cache.Lister` and decodes on every
  ``get``/``list``: each call returns fresh (frozen) objects. A typed informer
  (``SharedInformerFactory.lister_for(cls)``) decodes once, when the object arrives, instead.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

import msgspec

from pyctrl.api.crd import kind_info
from pyctrl.api.types import Object, Struct
from pyctrl.cache.lister import Lister
from pyctrl.kube.resource import Resource

__all__ = [
    "DecodeError",
    "TypedLister",
    "decode",
    "encode",
    "merge_patch",
    "resource_for",
    "status_patch",
]

T = TypeVar("T", bound=Object)
Raw = Mapping[str, Any]


class DecodeError(ValueError):
    """A raw object does not match its typed class (a known field has the wrong type)."""


def resource_for(cls: type[Object]) -> Resource:
    """The Resource (group, version, plural, kind, scope) a kind's class is served at."""
    info = kind_info(cls)
    return Resource(info.group, info.version, info.plural, info.kind,
                    namespaced=info.scope == "Namespaced")


def decode(cls: type[T], raw: Raw) -> T:
    """A fresh typed view of ``raw`` (module docstring); ``raw`` is only read."""
    try:
        return msgspec.convert(raw, cls, strict=False)
    except msgspec.ValidationError as err:
        meta = raw.get("metadata") or {}
        raise DecodeError(f"{cls.__name__} {meta.get('namespace', '')}/{meta.get('name', '')}"
                          f": {err}") from None


def encode(obj: Struct) -> dict[str, Any]:
    """The JSON-ready dict of a typed object (camelCase, defaults omitted)."""
    out: dict[str, Any] = msgspec.to_builtins(obj)
    info = getattr(type(obj), "__kind__", None)
    if isinstance(obj, Object) and info is not None:
        out = {"apiVersion": info.api_version, "kind": info.kind, **out}
    return out


def merge_patch(old: Raw, new: Raw, known: frozenset[str] | None = None) -> dict[str, Any]:
    """The RFC 7386 merge patch turning ``old`` into ``new``; with ``known``, only those
    top-level keys are compared (others in ``old`` are left alone)."""
    patch: dict[str, Any] = {}
    keys = set(new) | ({k for k in old if known is None or k in known})
    for key in sorted(keys):
        if key not in new:
            patch[key] = None
        elif key not in old:
            patch[key] = new[key]
        elif isinstance(old[key], Mapping) and isinstance(new[key], Mapping):
            sub = merge_patch(old[key], new[key])
            if sub:
                patch[key] = sub
        elif old[key] != new[key]:
            patch[key] = new[key]
    return patch


def status_patch(raw: Raw, status: Struct, *, resource_version: str = "") -> dict[str, Any]:
    """A merge patch for the status subresource (module docstring)."""
    old = raw.get("status") or {}
    known = _encode_names(type(status))
    body = merge_patch(old, encode(status), known)
    if not body:
        return {}
    patch: dict[str, Any] = {"status": body}
    if resource_version:
        patch["metadata"] = {"resourceVersion": resource_version}
    return patch


@functools.cache
def _encode_names(cls: type[Struct]) -> frozenset[str]:
    return frozenset(cls.__struct_encode_fields__)


class TypedLister(Generic[T]):
    """Typed reads from an informer's cache (module docstring)."""

    def __init__(self, lister: Lister, cls: type[T]) -> None:
        self.lister = lister
        self.cls = cls

    def get(self, namespace: str | None, name: str) -> T:
        """The typed object; raises :class:`pyctrl.errors.NotFound` as the Lister does."""
        return decode(self.cls, self.lister.get(namespace, name))

    def list(self, namespace: str | None = None) -> list[T]:
        """Every cached object (of ``namespace`` when given), typed."""
        return [decode(self.cls, o) for o in self.lister.list(namespace)]
