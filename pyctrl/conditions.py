"""Status conditions: find, set and remove typed ``metav1.Condition`` entries in a list.

Contract (apimachinery ``meta.SetStatusCondition``/``FindStatusCondition``/
``RemoveStatusCondition``, on :class:`pyctrl.api.Condition` values): there is at most one
condition per ``type``. Nothing is changed in place: every helper takes any
``Sequence[Condition]`` (a cached object's list included) and the two that "change" return a
new list, so the result goes into a new status with :func:`pyctrl.api.replace`.

* :func:`set_status_condition` returns the list with the condition of ``type`` set: a new
  type is appended with ``lastTransitionTime`` = ``last_transition_time`` if given, else now;
  an existing one keeps its ``lastTransitionTime`` unless ``status`` changes (then the given
  time or now), and takes the new ``reason``, ``message`` and ``observedGeneration``
  (``observed_generation=None`` keeps the one it had). Order is kept. "Now" comes from
  ``clock`` (default: the real clock), whole seconds in UTC as the server stores it, so tests
  use a FakeClock. Compare the result with the input (``!=``) to know whether it changed.
* :func:`find_status_condition` returns the condition of a type or None;
  :func:`is_status_condition_true` tells whether it exists with status "True".
* :func:`remove_status_condition` returns the list without the condition of a type.
* :func:`set_already_owned` is :func:`set_status_condition` for a refused ownership: the
  condition of ``type`` (default ``Ready``) ``False``, reason ``AlreadyOwned``, the error's
  message (which names the object and who controls it, or that nobody does).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal

from pyctrl.api.types import Condition, replace
from pyctrl.clock import Clock, RealClock
from pyctrl.errors import AlreadyOwned

__all__ = [
    "Condition",
    "ConditionStatus",
    "find_status_condition",
    "is_status_condition_true",
    "remove_status_condition",
    "set_already_owned",
    "set_status_condition",
]

ConditionStatus = Literal["True", "False", "Unknown"]


def find_status_condition(conditions: Sequence[Condition] | None,
                          type: str) -> Condition | None:
    """The condition of ``type``, or None."""
    for cond in conditions or ():
        if cond.type == type:
            return cond
    return None


def is_status_condition_true(conditions: Sequence[Condition] | None, type: str) -> bool:
    """True when the condition of ``type`` exists with status "True"."""
    cond = find_status_condition(conditions, type)
    return cond is not None and cond.status == "True"


def set_status_condition(conditions: Sequence[Condition] | None, type: str,
                         status: ConditionStatus, reason: str, message: str = "", *,
                         observed_generation: int | None = None,
                         last_transition_time: datetime | None = None,
                         clock: Clock | None = None) -> list[Condition]:
    """``conditions`` with the condition of ``type`` set (module docstring)."""
    if not type:
        raise ValueError("a condition needs a type")
    out = list(conditions or ())
    for i, old in enumerate(out):
        if old.type == type:
            moved = old.status != status
            out[i] = replace(
                old, status=status, reason=reason, message=message,
                last_transition_time=(last_transition_time or _now(clock)) if moved
                else old.last_transition_time,
                observed_generation=old.observed_generation if observed_generation is None
                else observed_generation)
            return out
    out.append(Condition(type=type, status=status, reason=reason, message=message,
                         last_transition_time=last_transition_time or _now(clock),
                         observed_generation=observed_generation))
    return out


def remove_status_condition(conditions: Sequence[Condition] | None,
                            type: str) -> list[Condition]:
    """``conditions`` without the condition of ``type``."""
    return [cond for cond in conditions or () if cond.type != type]


def set_already_owned(conditions: Sequence[Condition] | None, err: AlreadyOwned, *,
                      type: str = "Ready", observed_generation: int | None = None,
                      clock: Clock | None = None) -> list[Condition]:
    """``conditions`` with ``type`` False for ``err``, reason AlreadyOwned (module docstring)."""
    return set_status_condition(conditions, type, "False", "AlreadyOwned", str(err),
                                observed_generation=observed_generation, clock=clock)


def _now(clock: Clock | None) -> datetime:
    return (clock or RealClock()).now().astimezone(UTC).replace(microsecond=0)
