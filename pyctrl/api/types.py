"""Base classes for API types: :class:`Struct`, :class:`Object` and the common metav1 parts.

Contract:

* :class:`Struct` is a ``msgspec.Struct`` whose Python snake_case field names map to
  camelCase JSON names (``time_zone`` <-> ``timeZone``; ``msgspec.field(name=...)`` overrides
  one), and whose fields equal to their defaults are omitted when encoded, as Go's
  ``omitempty`` does. Declare required fields first (no default), then optional ones.
  Instances are frozen (``frozen=True``, so hashable too): objects from a typed cache are
  shared by every reader, and a frozen object cannot be changed under them. To change one,
  build a new one with :func:`replace` (``msgspec.structs.replace`` for a Struct, and the
  same call for an :class:`pyctrl.api.Unstructured`, as ``pyctrl.api.replace``):
  ``replace(obj, status=replace(obj.status, ready=True))``.
  Instances are not tracked by the cyclic garbage collector (``gc=False``): an API object is
  a tree, and one that is made to contain itself is never freed.
* :class:`Object` adds ``apiVersion``, ``kind`` and a typed :class:`ObjectMeta`; a kind
  subclasses it, declares ``spec`` (and usually ``status``) and is decorated with
  :func:`pyctrl.api.kind`.
* :data:`Int32`, :data:`Int64` are ``int`` with the OpenAPI format, and the decoder holds a
  value to the format's range (a stored 2**31 in an Int32 field does not decode: a typed
  informer keeps that object as a stand-in, :mod:`pyctrl.cache.quarantine`); ``datetime`` fields are
  ``format: date-time`` strings (RFC 3339) and decode to aware datetimes.
* :data:`JobTemplateSpec`, :data:`PodTemplateSpec` are raw dicts whose schema is the real
  Kubernetes one (:class:`~pyctrl.api.markers.Embedded`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal, Never, TypeVar, dataclass_transform

import msgspec

from pyctrl.api.markers import (
    Embedded,
    Format,
    KindInfo,
    ListType,
    MaxLength,
    Minimum,
    MinLength,
    Pattern,
)

__all__ = [
    "EMPTY_MAP",
    "INT32_RANGE",
    "INT64_RANGE",
    "Condition",
    "Int32",
    "Int64",
    "JobTemplateSpec",
    "Object",
    "ObjectMeta",
    "OwnerReference",
    "PodTemplateSpec",
    "Struct",
    "field",
    "replace",
]

field = msgspec.field
R = TypeVar("R")


def replace(obj: R, /, **changes: object) -> R:
    """A copy of ``obj`` with ``changes``: a Struct's fields (``msgspec.structs.replace``),
    or an :class:`pyctrl.api.Unstructured`'s ``metadata`` and top-level fields (its own
    ``replace``)."""
    if isinstance(obj, msgspec.Struct):
        return msgspec.structs.replace(obj, **changes)
    own = getattr(obj, "replace", None)
    if own is None:
        raise TypeError(f"can not replace fields of a {type(obj).__name__}")
    out: R = own(**changes)
    return out

EMPTY_MAP: Mapping[str, Never] = MappingProxyType({})
"""The default of a ``Mapping`` field: one shared, read-only empty map (an absent map field
costs no allocation; a ``dict`` default would cost one per object)."""

# What the decoder holds an Int32/Int64 to; not a schema marker (the format says it), so
# the schema builder skips exactly these two.
INT32_RANGE = msgspec.Meta(ge=-(2**31), le=2**31 - 1)
INT64_RANGE = msgspec.Meta(ge=-(2**63), le=2**63 - 1)
Int32 = Annotated[int, Format("int32"), INT32_RANGE]
Int64 = Annotated[int, Format("int64"), INT64_RANGE]

JobTemplateSpec = Annotated[dict[str, Any], Embedded("io.k8s.api.batch.v1.JobTemplateSpec")]
PodTemplateSpec = Annotated[dict[str, Any], Embedded("io.k8s.api.core.v1.PodTemplateSpec")]


# frozen_default: type checkers see every subclass frozen too, as msgspec makes it at run time.
@dataclass_transform(frozen_default=True, field_specifiers=(msgspec.field,))
class Struct(msgspec.Struct, rename="camel", omit_defaults=True, frozen=True, gc=False):
    """Base of every API type (camelCase JSON names, defaults omitted when encoding,
    frozen: change a copy made with :func:`replace`)."""


class OwnerReference(Struct):
    """metav1.OwnerReference."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(Struct):
    """metav1.ObjectMeta, shared by user kinds and :mod:`pyctrl.models` (without
    ``managedFields`` and the deprecated ``selfLink``)."""

    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    annotations: dict[str, str] = msgspec.field(default_factory=dict)
    finalizers: list[str] = msgspec.field(default_factory=list)
    owner_references: list[OwnerReference] = msgspec.field(default_factory=list)


class Object(Struct, kw_only=True):
    """A top-level API object: ``apiVersion``, ``kind``, ``metadata``; subclasses add spec and
    status. ``__kind__`` is set by :func:`pyctrl.api.kind`."""

    __kind__: ClassVar[KindInfo]

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class Condition(Struct):
    """metav1.Condition, with the upstream schema's bounds (so CEL rules may read it)."""

    type: Annotated[str, MaxLength(316), Pattern(
        r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
        r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")]
    status: Literal["True", "False", "Unknown"]
    last_transition_time: datetime
    reason: Annotated[str, MinLength(1), MaxLength(1024),
                      Pattern(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")]
    message: Annotated[str, MaxLength(32768)]
    observed_generation: Annotated[Int64, Minimum(0)] | None = None


CONDITIONS_LIST = ListType.map("type")
"""The list type of ``conditions``: a list-map keyed by ``type``."""
