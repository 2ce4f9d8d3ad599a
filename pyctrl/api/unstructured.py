"""Unstructured: an object of a kind with no model, behind the same protocol as typed kinds.

Contract (controller-runtime's ``unstructured.Unstructured``, frozen like pyctrl's Structs):

* An :class:`Unstructured` holds an object's JSON content: its ``metadata`` decoded into a
  typed :class:`pyctrl.api.ObjectMeta` (so :mod:`pyctrl.kube.meta`, owner references,
  finalizers and key functions read it exactly as they read a typed kind), everything else
  (``apiVersion``, ``kind``, ``spec``, ``status``, ``data``, ...) kept as decoded JSON in
  :attr:`~Unstructured.body`. Metadata fields ObjectMeta does not declare (``managedFields``,
  ``selfLink``) are not kept, as for typed kinds. Malformed metadata raises
  :class:`UnstructuredDecodeError` (:class:`pyctrl.api.DecodeError` from
  :func:`pyctrl.api.decode`; in an informer the object is dropped and logged, as a typed
  kind's object whose metadata does not decode).
* Reads: ``obj["spec"]``, :meth:`~Unstructured.get` and :attr:`~Unstructured.body` give
  JSON values (:data:`pyctrl.api.markers.JSONValue`); the ``nested_*`` methods walk a path
  and hold the value to one type (``obj.nested_int("spec", "replicas")``: None when a step
  is missing or null, TypeError naming the path when a value has another type), as
  apimachinery's ``NestedString``/``NestedInt64``/... do.
* It is frozen by contract: attributes can not be set, and :attr:`~Unstructured.body` is a
  read-only view of the top level. Nested values are plain dicts and lists shared with the
  cache the object may come from: never change them; build a changed copy with
  :meth:`~Unstructured.replace` (or :func:`pyctrl.api.replace`, which takes either form),
  e.g. ``obj.replace(spec={**obj["spec"], "replicas": 3})``.
* :meth:`Unstructured.of` binds the class to a :class:`pyctrl.kube.Resource`: the subclass it
  returns (one per Resource) carries the kind's :class:`~pyctrl.api.KindInfo`, so
  ``TypedClient`` (get/list/create/update/patch/apply/delete), ``informer_for`` and
  ``lister_for`` take it where they take a kind class, and its instances fill ``apiVersion``
  and ``kind`` from the Resource when the content lacks them (LIST items do). An instance of
  the unbound class reads them from its content only; the client needs a bound class (or an
  instance of one) to know where to send it.
* Decoding: :meth:`~Unstructured.from_json` is the hook msgspec decoders call
  (:func:`pyctrl.kube.body.json_decoder`), so a LIST page or watch line of an unstructured
  kind decodes in one pass as a typed kind's does. :meth:`~Unstructured.to_dict` is the JSON
  content (``apiVersion``, ``kind``, ``metadata`` encoded, then the rest).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar, Self, TypeVar

import msgspec

from pyctrl.api.bound import bind
from pyctrl.api.markers import JSONValue, KindInfo
from pyctrl.api.types import ObjectMeta
from pyctrl.kube.resource import Resource

__all__ = ["Unstructured", "UnstructuredDecodeError"]


_set = object.__setattr__


class UnstructuredDecodeError(ValueError):
    """Content that is not an object, or whose metadata does not decode as ObjectMeta."""


def _meta_of(raw: object) -> ObjectMeta:
    if raw is None:
        return ObjectMeta()
    try:  # strict: JSON types as JSON has them (an RFC 3339 string still makes a datetime)
        return msgspec.convert(raw, ObjectMeta)
    except msgspec.ValidationError as err:
        raise UnstructuredDecodeError(f"metadata: {err}") from None


class Unstructured:
    """An object of any kind as JSON content with typed metadata (module docstring)."""

    __slots__ = ("_body", "_metadata")
    __kind__: ClassVar[KindInfo]
    __resource__: ClassVar[Resource | None] = None

    _body: dict[str, Any]
    _metadata: ObjectMeta

    def __init__(self, content: Mapping[str, object] | None = None, /) -> None:
        body = dict(content or {})
        metadata = body.pop("metadata", None)
        self._init(body, metadata if isinstance(metadata, ObjectMeta) else _meta_of(metadata))

    def _init(self, body: dict[str, Any], metadata: ObjectMeta) -> None:
        resource = self.__resource__
        if resource is not None and not (body.get("kind") and body.get("apiVersion")):
            body = {"apiVersion": body.get("apiVersion") or resource.api_version,
                    "kind": body.get("kind") or resource.kind, **{
                        k: v for k, v in body.items() if k not in ("apiVersion", "kind")}}
        _set(self, "_body", body)
        _set(self, "_metadata", metadata)

    @classmethod
    def from_json(cls, raw: object) -> Self:
        """An instance from decoded JSON (only read, never changed); the decoder hook."""
        if not isinstance(raw, Mapping):
            raise UnstructuredDecodeError(f"expected a JSON object, got {type(raw).__name__}")
        body = dict(raw)
        metadata = body.pop("metadata", None)
        out = cls.__new__(cls)
        out._init(body, _meta_of(metadata))
        return out

    @classmethod
    def of(cls, resource: Resource) -> type[Unstructured]:
        """The Unstructured class bound to ``resource`` (one per Resource; module docstring)."""
        return _bound(resource)

    # -- the object protocol -------------------------------------------------------------
    @property
    def metadata(self) -> ObjectMeta:
        """``metadata``, typed."""
        return self._metadata

    @property
    def api_version(self) -> str:
        """``apiVersion`` (``""`` when missing)."""
        value = self._body.get("apiVersion")
        return value if isinstance(value, str) else ""

    @property
    def kind(self) -> str:
        """``kind`` (``""`` when missing)."""
        value = self._body.get("kind")
        return value if isinstance(value, str) else ""

    # -- the content ---------------------------------------------------------------------
    @property
    def body(self) -> Mapping[str, JSONValue]:
        """Every top-level field but ``metadata``, read-only (nested values: never change)."""
        return MappingProxyType(self._body)

    def __getitem__(self, key: str) -> JSONValue:
        value: JSONValue = self._body[key]
        return value

    def get(self, key: str, default: JSONValue = None) -> JSONValue:
        """The top-level field ``key`` (``default`` when missing)."""
        value: JSONValue = self._body.get(key, default)
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._body

    def __iter__(self) -> Iterator[str]:
        return iter(self._body)

    def nested(self, *path: str) -> JSONValue:
        """The value at ``path`` (``obj.nested("spec", "template")``); None when a step is
        missing; TypeError naming the path when a step is not an object."""
        value: JSONValue = self._body
        for i, key in enumerate(path):
            if value is None:
                return None
            if not isinstance(value, dict):
                raise TypeError(f"{'.'.join(path[:i])} is {type(value).__name__}, "
                                "expected an object")
            value = value.get(key)
        return value

    def nested_str(self, *path: str) -> str | None:
        """:meth:`nested` held to a string (TypeError for another type)."""
        return _held(self.nested(*path), str, path)

    def nested_int(self, *path: str) -> int | None:
        """:meth:`nested` held to an integer (TypeError for another type, ``bool`` too)."""
        value = self.nested(*path)
        if isinstance(value, bool):
            raise TypeError(f"{'.'.join(path)} is bool, expected int")
        return _held(value, int, path)

    def nested_bool(self, *path: str) -> bool | None:
        """:meth:`nested` held to a boolean (TypeError for another type)."""
        return _held(self.nested(*path), bool, path)

    def nested_map(self, *path: str) -> Mapping[str, JSONValue] | None:
        """:meth:`nested` held to an object (TypeError for another type), read-only."""
        found = _held(self.nested(*path), dict, path)
        return None if found is None else MappingProxyType(found)

    def nested_list(self, *path: str) -> Sequence[JSONValue] | None:
        """:meth:`nested` held to a list (TypeError for another type), as a tuple."""
        found = _held(self.nested(*path), list, path)
        return None if found is None else tuple(found)

    def to_dict(self) -> dict[str, Any]:
        """The JSON content: ``apiVersion``, ``kind``, ``metadata`` (encoded), the rest."""
        head: dict[str, Any] = {k: self._body[k] for k in ("apiVersion", "kind")
                                if k in self._body}
        return {**head, "metadata": msgspec.to_builtins(self._metadata), **self._body}

    def replace(self, *, metadata: ObjectMeta | None = None, **fields: object) -> Self:
        """A copy with ``metadata`` and the given top-level fields replaced (a field given as
        None is removed)."""
        body = {**self._body, **fields}
        for key in [k for k, v in fields.items() if v is None]:
            del body[key]
        out = type(self).__new__(type(self))
        out._init(body, self._metadata if metadata is None else metadata)
        return out

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: build a copy with replace()")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Unstructured):
            return NotImplemented
        return (self.api_version, self.kind, self._metadata, self._body) == (
            other.api_version, other.kind, other._metadata, other._body)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        md = self._metadata
        where = f"{md.namespace}/{md.name}" if md.namespace else md.name
        return f"{type(self).__name__}({self.api_version} {self.kind} {where!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return _rebuild, (self.__resource__, self.to_dict())


J = TypeVar("J")


def _held(value: JSONValue, kind: type[J], path: tuple[str, ...]) -> J | None:
    if value is None:
        return None
    if not isinstance(value, kind):
        raise TypeError(f"{'.'.join(path)} is {type(value).__name__}, expected {kind.__name__}")
    return value


def _rebuild(resource: Resource | None, content: dict[str, Any]) -> Unstructured:
    cls = Unstructured if resource is None else _bound(resource)
    return cls(content)


def _bound(resource: Resource) -> type[Unstructured]:
    return bind(Unstructured, resource, {"__slots__": ()})
