"""Object-metadata accessors every layer shares (apimachinery's ``metav1`` helpers).

Contract: this module is the one place that reads an object's metadata. It reads two forms:

* an :class:`Object` (``pyctrl.Object``): anything with a ``metadata`` shaped like
  :class:`pyctrl.api.ObjectMeta` and ``api_version``/``kind``. Typed kinds
  (:class:`pyctrl.api.Object` subclasses, :mod:`pyctrl.models`) and
  :class:`pyctrl.api.Unstructured` are both one, so every helper above the transport reads
  the one form (and writes it with ``pyctrl.api.replace``);
* a raw dict (:data:`pyctrl.kube.interface.RawObject`), the transport's form: what the raw
  client answers, and what raw-dict and metadata-only informers cache. The branch for it
  stays here, below the API types, so the cache's keys and indexes, the handlers and
  sharding read either form.

* :func:`name`, :func:`generate_name`, :func:`namespace`, :func:`uid`,
  :func:`resource_version` return ``""`` when
  the field is missing, as do :func:`api_version` and :func:`kind` (top-level fields, not
  metadata; a typed object whose field is unset reads its class's
  :class:`pyctrl.api.KindInfo`); :func:`generation` None (a typed object's default ``0``
  also reads as None: the API server starts generations at 1, so ``0`` means "not set");
  :func:`labels`, :func:`annotations` an empty mapping, :func:`finalizers` and
  :func:`owner_references` an empty sequence; :func:`deletion_timestamp` None, else the value
  as the object holds it (an RFC 3339 string in a dict, an aware datetime in an Object).
  Raw dicts are read defensively: a missing or malformed ``metadata`` reads as empty.
* :func:`controller_of` is the one walk over ``metadata.ownerReferences``: it returns the first
  owner reference with ``controller: true`` (an object has at most one, as
  ``metav1.GetControllerOf`` assumes), or None; a dict's reference is a dict, an Object's
  its typed reference. It reads defensively: a missing or malformed ``ownerReferences``, and
  entries that are not mappings, count as no controller, so a handler or index fed a
  half-formed object never raises. :func:`controller_ref` is the same reference as a
  :class:`OwnerRef` (the same four fields for both forms). Nothing here copies or mutates:
  what is returned is the object's own (read-only for cached objects).

Times as the API server writes them, one place for every writer (conditions, events,
Leases, the CronJob status): :func:`format_time` is a ``metav1.Time`` (RFC 3339 in UTC,
whole seconds, ``Z``), :func:`format_micro_time` a ``metav1.MicroTime`` (the same with
microseconds). Both take an aware datetime in any zone (a naive one is read as local time, as
``datetime.astimezone`` does). :func:`parse_micro_time` reads either form back (an aware
datetime; a string without an offset is read as UTC), None for a missing or malformed value;
it is the one metav1 time parser. :func:`group_version` is the one ``apiVersion`` parser
(:func:`api_group` its group).

It lives in ``pyctrl.kube`` (the lowest layer) so ``pyctrl.cache`` (keys, the namespace and
controller-UID indexes), the handlers and :mod:`pyctrl.ownerrefs` all use it; it imports
nothing from ``pyctrl.api`` (an Object is recognised by shape: whatever is not a mapping is
read through its ``metadata`` attribute).
"""

# No ``from __future__ import annotations``: a function here is named ``annotations``.

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol, TypeAlias, overload

__all__ = [
    "AnyObject",
    "Object",
    "ObjectMetaLike",
    "OwnerRef",
    "OwnerReferenceLike",
    "annotations",
    "api_group",
    "api_version",
    "controller_of",
    "controller_ref",
    "deletion_timestamp",
    "finalizers",
    "format_micro_time",
    "format_rfc3339",
    "format_time",
    "generate_name",
    "generation",
    "group_version",
    "kind",
    "labels",
    "name",
    "namespace",
    "owner_references",
    "parse_micro_time",
    "resource_version",
    "uid",
]


class OwnerReferenceLike(Protocol):
    """The read side of a typed owner reference (:class:`pyctrl.api.OwnerReference`)."""

    @property
    def api_version(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def controller(self) -> bool | None: ...


class ObjectMetaLike(Protocol):
    """The read side of a typed ObjectMeta (:class:`pyctrl.api.ObjectMeta`)."""

    @property
    def name(self) -> str: ...
    @property
    def generate_name(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def resource_version(self) -> str: ...
    @property
    def generation(self) -> int: ...
    @property
    def deletion_timestamp(self) -> datetime | None: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def annotations(self) -> Mapping[str, str]: ...
    @property
    def finalizers(self) -> Sequence[str]: ...
    @property
    def owner_references(self) -> Sequence[OwnerReferenceLike]: ...


class Object(Protocol):
    """``pyctrl.Object``: an API object with a typed ``metadata`` (a typed kind or an
    :class:`pyctrl.api.Unstructured`; module docstring). ``api_version`` and ``kind`` may be
    ``""`` on a typed object built in code: :func:`api_version` and :func:`kind` then read
    its class's."""

    @property
    def metadata(self) -> ObjectMetaLike: ...
    @property
    def api_version(self) -> str: ...
    @property
    def kind(self) -> str: ...


AnyObject: TypeAlias = Mapping[str, Any] | Object
"""A raw object (the transport's dict) or an :class:`Object`."""


class OwnerRef(NamedTuple):
    """An owner reference's identifying fields, whichever form it came in."""

    api_version: str
    kind: str
    name: str
    uid: str


_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _raw(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    md = obj.get("metadata")
    return md if isinstance(md, Mapping) else _EMPTY


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def name(obj: AnyObject) -> str:
    """``metadata.name`` (``""`` when missing)."""
    if type(obj) is dict or isinstance(obj, Mapping):  # dicts first: the hot case
        return _str(_raw(obj).get("name"))
    return obj.metadata.name


def generate_name(obj: AnyObject) -> str:
    """``metadata.generateName`` (``""`` when missing)."""
    if isinstance(obj, Mapping):
        return _str(_raw(obj).get("generateName"))
    return obj.metadata.generate_name


def namespace(obj: AnyObject) -> str:
    """``metadata.namespace`` (``""`` for cluster-scoped objects)."""
    if type(obj) is dict or isinstance(obj, Mapping):  # dicts first: the hot case
        return _str(_raw(obj).get("namespace"))
    return obj.metadata.namespace


def uid(obj: AnyObject) -> str:
    """``metadata.uid`` (``""`` when missing)."""
    if isinstance(obj, Mapping):
        return _str(_raw(obj).get("uid"))
    return obj.metadata.uid


def resource_version(obj: AnyObject) -> str:
    """``metadata.resourceVersion`` (``""`` when missing)."""
    if type(obj) is dict or isinstance(obj, Mapping):  # dicts first: the hot case
        return _str(_raw(obj).get("resourceVersion"))
    return obj.metadata.resource_version


def api_version(obj: AnyObject) -> str:
    """``apiVersion`` (``""`` when missing; a typed object's class gives it when unset)."""
    if isinstance(obj, Mapping):
        return _str(obj.get("apiVersion"))
    return obj.api_version or _str(
        getattr(getattr(type(obj), "__kind__", None), "api_version", ""))


def kind(obj: AnyObject) -> str:
    """``kind`` (``""`` when missing; a typed object's class gives it when unset)."""
    if isinstance(obj, Mapping):
        return _str(obj.get("kind"))
    return obj.kind or _str(getattr(getattr(type(obj), "__kind__", None), "kind", ""))


def generation(obj: AnyObject) -> int | None:
    """``metadata.generation``; None when missing (or a typed object's unset ``0``)."""
    if isinstance(obj, Mapping):
        gen = _raw(obj).get("generation")
        return gen if isinstance(gen, int) else None
    return obj.metadata.generation or None


def labels(obj: AnyObject) -> Mapping[str, str]:
    """``metadata.labels`` (empty when missing)."""
    if isinstance(obj, Mapping):
        found = _raw(obj).get("labels")
        return found if isinstance(found, Mapping) else _EMPTY
    return obj.metadata.labels


def annotations(obj: AnyObject) -> Mapping[str, str]:
    """``metadata.annotations`` (empty when missing)."""
    if isinstance(obj, Mapping):
        found = _raw(obj).get("annotations")
        return found if isinstance(found, Mapping) else _EMPTY
    return obj.metadata.annotations


def finalizers(obj: AnyObject) -> Sequence[str]:
    """``metadata.finalizers`` (empty when missing)."""
    if isinstance(obj, Mapping):
        found = _raw(obj).get("finalizers")
        return found if isinstance(found, list) else ()
    return obj.metadata.finalizers


def owner_references(obj: AnyObject) -> Sequence[Mapping[str, Any] | OwnerReferenceLike]:
    """``metadata.ownerReferences`` (empty when missing), in the object's own form."""
    if isinstance(obj, Mapping):
        found = _raw(obj).get("ownerReferences")
        return found if isinstance(found, list) else ()
    return obj.metadata.owner_references


def deletion_timestamp(obj: AnyObject) -> str | datetime | None:
    """``metadata.deletionTimestamp`` as the object holds it; None when not being deleted."""
    if isinstance(obj, Mapping):
        found = _raw(obj).get("deletionTimestamp")
        return found if isinstance(found, str | datetime) and found else None
    return obj.metadata.deletion_timestamp


def format_time(when: datetime) -> str:
    """A ``metav1.Time`` string: RFC 3339 in UTC, whole seconds (``2024-01-02T03:04:05Z``)."""
    return when.astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def format_rfc3339(when: datetime) -> str:
    """Go's ``time.RFC3339`` in ``when``'s own zone (for messages that name a local time):
    whole seconds, ``Z`` for offset 0, else ``+hh:mm``; ValueError for a naive datetime."""
    offset = when.utcoffset()
    if offset is None:
        raise ValueError(f"naive datetime {when!r}")
    text = when.replace(microsecond=0, tzinfo=None).isoformat()
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def format_micro_time(when: datetime) -> str:
    """A ``metav1.MicroTime`` string: RFC 3339 in UTC with microseconds."""
    return when.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def group_version(api_version: object) -> tuple[str, str]:
    """An ``apiVersion`` as (group, version): ``("batch", "v1")`` for ``"batch/v1"``,
    ``("", "v1")`` for the core group's ``"v1"``; ``("", "")`` for anything not a string."""
    if not isinstance(api_version, str):
        return "", ""
    group, _, version = api_version.rpartition("/")
    return group, version


def api_group(api_version: object) -> str:
    """The group of an ``apiVersion`` (:func:`group_version`'s first part)."""
    return group_version(api_version)[0]


def parse_micro_time(value: object) -> datetime | None:
    """A MicroTime/Time string as an aware datetime; None for missing or malformed values."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@overload
def controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None: ...
@overload
def controller_of(obj: Object) -> OwnerReferenceLike | None: ...


def controller_of(obj: AnyObject) -> dict[str, Any] | OwnerReferenceLike | None:
    """The owner reference of ``obj`` with ``controller: true``, or None."""
    if not isinstance(obj, Mapping):
        for typed in obj.metadata.owner_references:
            if typed.controller is True:
                return typed
        return None
    refs = _raw(obj).get("ownerReferences")
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, dict) and ref.get("controller") is True:
            found: dict[str, Any] = ref
            return found
    return None


def controller_ref(obj: AnyObject) -> OwnerRef | None:
    """:func:`controller_of` as an :class:`OwnerRef` (missing fields read as ``""``)."""
    if not isinstance(obj, Mapping):
        typed = controller_of(obj)
        if typed is None:
            return None
        return OwnerRef(typed.api_version, typed.kind, typed.name, typed.uid)
    ref = controller_of(obj)
    if ref is None:
        return None
    return OwnerRef(_str(ref.get("apiVersion")), _str(ref.get("kind")), _str(ref.get("name")),
                    _str(ref.get("uid")))
