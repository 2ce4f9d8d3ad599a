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

It lives in ``pyctrl.kube`` (the lowest layer) so ``pyctrl.cache`` (the controller-UID index),
the handlers and :mod:`pyctrl.ownerrefs` (the public helper) all use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

__all__ = ["controller_of", "format_micro_time", "format_time", "parse_micro_time"]


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
