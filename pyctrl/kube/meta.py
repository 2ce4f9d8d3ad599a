"""Object-metadata accessors every layer shares (apimachinery's ``metav1`` helpers).

Contract: :func:`controller_of` is the one walk over ``metadata.ownerReferences``: it returns
the first owner reference with ``controller: true`` (an object has at most one, as
``metav1.GetControllerOf`` assumes), or None. It reads defensively: a missing or malformed
``metadata``/``ownerReferences``, and entries that are not mappings, count as no controller,
so a handler or index fed a half-formed object never raises. It never copies or mutates:
the reference returned is the object's own (read-only for cached objects).

Times as the API server writes them, one place for every writer (conditions, events,
Leases, the CronJob status): :func:`format_time` is a ``metav1.Time`` (RFC 3339 in UTC,
whole seconds, ``Z``), :func:`format_micro_time` a ``metav1.MicroTime`` (the same with
microseconds). Both take an aware datetime in any zone (a naive one is read as local time, as
``datetime.astimezone`` does). :func:`parse_micro_time` reads either form back (an aware
datetime; a string without an offset is read as UTC), None for a missing or malformed value.

Accessors for a raw dict and a typed object alike (a :class:`pyctrl.api.Object`, read by
duck typing: its ``metadata`` attribute with snake_case fields): :func:`name`,
:func:`namespace`, :func:`uid`, :func:`resource_version`, :func:`generation` (None when
unset), :func:`labels` and :func:`annotations` (an empty mapping when unset). They only read.

It lives in ``pyctrl.kube`` (the lowest layer) so ``pyctrl.cache`` (the controller-UID index),
the handlers and :mod:`pyctrl.ownerrefs` (the public helper) all use it.
"""


from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "annotations",
    "api_version",
    "controller_of",
    "finalizers",
    "format_micro_time",
    "format_time",
    "generation",
    "kind",
    "labels",
    "name",
    "namespace",
    "parse_micro_time",
    "resource_version",
    "uid",
]

_EMPTY: Mapping[str, str] = {}


def _field(obj: object, key: str, attr: str) -> Any:
    if isinstance(obj, Mapping):
        md = obj.get("metadata")
        return md.get(key) if isinstance(md, Mapping) else None
    return getattr(getattr(obj, "metadata", None), attr, None)


def name(obj: object) -> str:
    """``metadata.name`` ("" when unset)."""
    return str(_field(obj, "name", "name") or "")


def namespace(obj: object) -> str:
    """``metadata.namespace`` ("" when unset or cluster-scoped)."""
    return str(_field(obj, "namespace", "namespace") or "")


def uid(obj: object) -> str:
    """``metadata.uid`` ("" when unset)."""
    return str(_field(obj, "uid", "uid") or "")


def resource_version(obj: object) -> str:
    """``metadata.resourceVersion`` ("" when unset)."""
    return str(_field(obj, "resourceVersion", "resource_version") or "")


def api_version(obj: object) -> str:
    """``apiVersion`` (a typed object's class gives it when the field is unset)."""
    if isinstance(obj, Mapping):
        return str(obj.get("apiVersion") or "")
    info = getattr(type(obj), "__kind__", None)
    return str(getattr(obj, "api_version", "") or getattr(info, "api_version", ""))


def kind(obj: object) -> str:
    """``kind`` (a typed object's class gives it when the field is unset)."""
    if isinstance(obj, Mapping):
        return str(obj.get("kind") or "")
    info = getattr(type(obj), "__kind__", None)
    return str(getattr(obj, "kind", "") or getattr(info, "kind", ""))


def finalizers(obj: object) -> list[str]:
    """A copy of ``metadata.finalizers`` (empty when unset)."""
    return list(_field(obj, "finalizers", "finalizers") or ())


def generation(obj: object) -> int | None:
    """``metadata.generation``, None when unset (a typed object's 0 is unset)."""
    value = _field(obj, "generation", "generation")
    return value if isinstance(value, int) and value else None


def labels(obj: object) -> Mapping[str, str]:
    """``metadata.labels`` (empty when unset)."""
    value = _field(obj, "labels", "labels")
    return value if isinstance(value, Mapping) else _EMPTY


def annotations(obj: object) -> Mapping[str, str]:
    """``metadata.annotations`` (empty when unset)."""
    value = _field(obj, "annotations", "annotations")
    return value if isinstance(value, Mapping) else _EMPTY


def format_time(when: datetime) -> str:
    """A ``metav1.Time`` string: RFC 3339 in UTC, whole seconds (``2024-01-02T03:04:05Z``)."""
    return when.astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def format_micro_time(when: datetime) -> str:
    """A ``metav1.MicroTime`` string: RFC 3339 in UTC with microseconds."""
    return when.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def parse_micro_time(value: object) -> datetime | None:
    """A MicroTime/Time string as an aware datetime; None for missing or malformed values."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The owner reference of ``obj`` with ``controller: true``, or None."""
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, dict) and ref.get("controller") is True:
            found: dict[str, Any] = ref
            return found
    return None
