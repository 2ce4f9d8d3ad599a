"""Status conditions: set, find and remove ``metav1.Condition`` entries in a list.

Contract (apimachinery ``meta.SetStatusCondition``/``FindStatusCondition``/
``RemoveStatusCondition``): a condition is a dict with ``type``, ``status`` ("True", "False",
"Unknown"), ``reason``, ``message``, ``lastTransitionTime`` (RFC 3339, UTC, seconds) and
optionally ``observedGeneration``; there is at most one condition per ``type``.

* :func:`set_status_condition` changes ``conditions`` **in place** and returns True when it
  changed anything. A new type is appended, with ``lastTransitionTime`` = the given one or
  now. For an existing type, ``lastTransitionTime`` changes only when ``status`` changes
  (to the new condition's, or now when it has none); ``reason``, ``message`` and
  ``observedGeneration`` are updated whenever they differ. "Now" comes from ``clock``
  (default: the real clock), so tests use a FakeClock.
* :func:`find_status_condition` returns the condition of a type or None;
  :func:`is_status_condition_true` tells whether it exists with status "True".
* :func:`remove_status_condition` removes a type in place and returns whether it was there.

Never pass a list from a cached object: copy the object first.
"""

from __future__ import annotations

from collections.abc import MutableSequence, Sequence
from typing import Any

from pyctrl.clock import Clock, RealClock
from pyctrl.kube.meta import format_time

__all__ = [
    "Condition",
    "find_status_condition",
    "is_status_condition_true",
    "remove_status_condition",
    "set_status_condition",
]

Condition = dict[str, Any]


def find_status_condition(conditions: Sequence[Condition] | None,
                          type: str) -> Condition | None:
    """The condition of ``type``, or None."""
    for cond in conditions or ():
        if cond.get("type") == type:
            return cond
    return None


def is_status_condition_true(conditions: Sequence[Condition] | None, type: str) -> bool:
    """True when the condition of ``type`` exists with status "True"."""
    cond = find_status_condition(conditions, type)
    return cond is not None and cond.get("status") == "True"


def set_status_condition(conditions: MutableSequence[Condition], new: Condition, *,
                         clock: Clock | None = None) -> bool:
    """Set ``new`` in ``conditions`` in place; True if anything changed (module docstring)."""
    if not new.get("type"):
        raise ValueError("a condition needs a type")
    existing = find_status_condition(conditions, str(new["type"]))
    if existing is None:
        added = dict(new)
        if not added.get("lastTransitionTime"):
            added["lastTransitionTime"] = _now(clock)
        conditions.append(added)
        return True
    changed = False
    if existing.get("status") != new.get("status"):
        existing["status"] = new.get("status")
        existing["lastTransitionTime"] = new.get("lastTransitionTime") or _now(clock)
        changed = True
    for field in ("reason", "message", "observedGeneration"):
        if field in new and existing.get(field) != new[field]:
            existing[field] = new[field]
            changed = True
    return changed


def remove_status_condition(conditions: MutableSequence[Condition], type: str) -> bool:
    """Remove the condition of ``type`` in place; True if it was there."""
    for i, cond in enumerate(conditions):
        if cond.get("type") == type:
            del conditions[i]
            return True
    return False


def _now(clock: Clock | None) -> str:
    return format_time((clock or RealClock()).now())
