"""Typed objects: read a cached raw dict as its API class, write typed status back.

Contract:

* :func:`resource_for` is the :class:`pyctrl.kube.Resource` of a kind's class (for clients,
  informers and the Builder, which stay raw-dict).
* :func:`decode` builds a fresh typed object of any :class:`Struct` class (a kind, a spec, a
  :class:`Condition`) from a raw dict (the informer's cached object, or a watch event's)
  without copying or changing the dict: it only reads it; given JSON bytes, it decodes them
  straight into the class (no dict on the way). :func:`convert` does the same for any
  builtin value (a list of conditions: ``convert(list[Condition], raw)``). Unknown fields
  are ignored by the typed view and remain in the raw dict; nothing the view does reaches the
  cache. It raises :class:`DecodeError` when a known field has the wrong type (the CRD's
  schema normally makes that impossible). Both are safe from many threads at once: msgspec
  builds a type's decoding info on its first use, and two threads doing that at once for the
  same (or a nested, shared) type crash the interpreter, so the first use of each type is made
  once, under a lock (:func:`prepare`). Cost: a few microseconds for a CronJob-sized object
  (``python -m bench typed-read``); hot loops that read one field keep using the dict.
* :func:`encode` is the inverse for the declared fields: camelCase keys, fields equal to
  their defaults omitted, ``apiVersion``/``kind`` filled from the class.
* :func:`status_changes` is the merge patch body for one status: the fields of ``new`` (an
  encoded status) that differ from ``old``, ``None`` for a declared field ``new`` dropped.
  Equality is the ``equal(field, old, new)`` hook, by default :func:`unset_equals_empty` (a
  missing field equals ``None``, ``[]``, ``{}``, ``0``, ``""`` and ``False``): a field that
  only moves between unset and empty is no reason to write, but rides along with a write that
  happens anyway. Nested objects are compared as a whole and sent as their own merge patch.
* :func:`status_patch` is the JSON merge patch (RFC 7386) that makes ``raw``'s status equal
  the typed ``status`` for the declared fields, and leaves every other field of ``raw``'s
  status alone (so fields written by a newer controller version survive). An unchanged status
  gives an empty patch (``{}``), which callers skip. Lists are replaced whole, as merge
  patches do. With ``resource_version`` the patch carries it as a precondition (409 Conflict
  when someone wrote in between).

Typed objects are frozen (:class:`pyctrl.api.Struct`); :func:`pyctrl.api.replace` builds a
changed copy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec

from pyctrl.api.crd import kind_info
from pyctrl.api.schema import SchemaError
from pyctrl.api.types import Object, Struct
from pyctrl.api.unstructured import Unstructured
from pyctrl.kube.body import dec_hook, json_decoder, prepare
from pyctrl.kube.resource import Resource

__all__ = [
    "DecodeError",
    "Equal",
    "convert",
    "decode",
    "encode",
    "json_decoder",
    "merge_patch",
    "prepare",
    "resource_for",
    "status_changes",
    "status_patch",
    "unset_equals_empty",
]

S = TypeVar("S", bound=Struct | Unstructured)
K = TypeVar("K", bound=Object | Unstructured)
V = TypeVar("V")
Equal = Callable[[str, Any, Any], bool]
"""``equal(field, old, new)``: whether two encoded values of a status field mean the same."""

Raw = Mapping[str, Any]


class DecodeError(ValueError):
    """A raw object does not match its typed class (a known field has the wrong type)."""


def resource_for(cls: type[K]) -> Resource:
    """The Resource (group, version, plural, kind, scope) a kind's class is served at (an
    Unstructured class: the one it is bound to, :meth:`Unstructured.of`)."""
    if issubclass(cls, Unstructured):
        if cls.__resource__ is None:
            raise SchemaError("Unstructured is bound to no Resource: use Unstructured.of(R)")
        return cls.__resource__
    info = kind_info(cls)
    return Resource(info.group, info.version, info.plural, info.kind,
                    namespaced=info.scope == "Namespaced")


def decode(cls: type[S], raw: Raw | bytes) -> S:
    """A fresh typed ``cls`` from ``raw`` (module docstring); ``raw`` is only read."""
    prepare(cls)
    try:
        if isinstance(raw, bytes | bytearray | memoryview):
            decoder: msgspec.json.Decoder[S] = _json_decoder(cls)
            return decoder.decode(raw)
        return msgspec.convert(raw, cls, strict=False, dec_hook=dec_hook)
    except msgspec.ValidationError as err:
        if isinstance(raw, Mapping) and issubclass(cls, Object | Unstructured):
            meta = raw.get("metadata") or {}
            name = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
            raise DecodeError(f"{cls.__name__} {name}: {err}") from None
        raise DecodeError(f"{cls.__name__}: {err}") from None


def convert(cls: type[V], raw: object) -> V:
    """``raw`` (builtin values: dicts, lists, strings) as ``cls``, any type msgspec knows
    (``list[Condition]``, a Struct); raises :class:`DecodeError`."""
    prepare(cls)
    try:
        return msgspec.convert(raw, cls, strict=False, dec_hook=dec_hook)
    except msgspec.ValidationError as err:
        raise DecodeError(f"{getattr(cls, '__name__', cls)}: {err}") from None


def _json_decoder(cls: object) -> msgspec.json.Decoder[Any]:
    found = _DECODERS.get(cls)
    if found is None:
        found = _DECODERS.setdefault(cls, json_decoder(cls))
    return found


_DECODERS: dict[object, msgspec.json.Decoder[Any]] = {}


def encode(obj: Struct | Unstructured) -> dict[str, Any]:
    """The JSON-ready dict of a typed object (camelCase, defaults omitted) or of an
    Unstructured (its content)."""
    if isinstance(obj, Unstructured):
        return obj.to_dict()
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


def unset_equals_empty(field: str, old: Any, new: Any) -> bool:
    """The default :data:`Equal`: equal values, or both unset/empty (module docstring)."""
    del field
    return old == new or (_empty(old) and _empty(new))


def _empty(value: Any) -> bool:
    return value is None or value in ([], {}, 0, "")  # False == 0


_MISSING: Any = object()


def status_changes(old: Raw, new: Raw, *, known: frozenset[str] | None = None,
                   equal: Equal = unset_equals_empty) -> dict[str, Any]:
    """The merge patch body that turns status ``old`` into ``new`` (module docstring); only
    the ``known`` fields of ``old`` may be removed. ``{}`` when nothing needs writing."""
    patch: dict[str, Any] = {}
    needed = False
    for key in sorted(set(new) | {k for k in old if known is None or k in known}):
        have, want = old.get(key, _MISSING), new.get(key, _MISSING)
        if want is _MISSING:
            if have is not _MISSING and not equal(key, have, None):
                patch[key], needed = None, True
            continue
        if have is _MISSING:
            if want is not None:  # never send null for a field that is not set
                patch[key] = want
                needed = needed or not equal(key, None, want)
            continue
        if equal(key, have, want):
            continue
        needed = True
        if isinstance(have, Mapping) and isinstance(want, Mapping):
            patch[key] = merge_patch(have, want)
        else:
            patch[key] = want
    return patch if needed else {}


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
