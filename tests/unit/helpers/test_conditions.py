"""Conditions: apimachinery meta.SetStatusCondition semantics on typed, immutable lists."""

from __future__ import annotations

from datetime import UTC, datetime

import pyctrl
from pyctrl import api
from pyctrl.conditions import (
    Condition,
    find_status_condition,
    is_status_condition_true,
    remove_status_condition,
    set_status_condition,
)
from pyctrl.testing import FakeClock

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def cond(type: str, status: str = "True", when: datetime = T0) -> Condition:
    return api.convert(Condition, {"type": type, "status": status, "reason": "Ok",
                                   "message": "m", "lastTransitionTime": when.isoformat()})


def test_new_condition_gets_now_and_an_existing_one_keeps_its_time() -> None:
    clock = FakeClock()
    first = set_status_condition([], "Ready", "True", "Ok", "m", clock=clock)
    assert first == [cond("Ready")]
    clock.step(60.5)
    # Same status, new reason and generation: updated, but the transition time stays.
    second = set_status_condition(first, "Ready", "True", "StillOk", "m",
                                  observed_generation=2, clock=clock)
    assert second[0].reason == "StillOk" and second[0].observed_generation == 2
    assert second[0].last_transition_time == T0
    # observedGeneration not given: the one it had is kept; nothing else changed.
    assert set_status_condition(second, "Ready", "True", "StillOk", "m", clock=clock) == second
    # Status flips: the transition time moves to now (whole seconds, as the server stores).
    third = set_status_condition(second, "Ready", "False", "Broken", clock=clock)
    assert third[0].last_transition_time == datetime(2026, 1, 1, 0, 1, tzinfo=UTC)
    assert (third[0].status, third[0].reason, third[0].message) == ("False", "Broken", "")
    assert third[0].observed_generation == 2


def test_the_input_list_and_its_conditions_are_never_changed() -> None:
    cached = [cond("Ready"), cond("Stalled", "False")]
    before = [api.convert(Condition, api.encode(c)) for c in cached]
    out = set_status_condition(cached, "Ready", "False", "Broken", clock=FakeClock())
    assert cached == before and out is not cached
    assert [c.type for c in out] == ["Ready", "Stalled"]  # order kept
    assert remove_status_condition(cached, "Ready") == [cached[1]] and cached == before


def test_given_transition_time_is_used_only_when_status_changes() -> None:
    later = datetime(2025, 6, 1, tzinfo=UTC)
    conditions = [cond("Ready", when=datetime(2025, 1, 1, tzinfo=UTC))]
    same = set_status_condition(conditions, "Ready", "True", "Ok", "m",
                                last_transition_time=later)
    assert same == conditions
    flipped = set_status_condition(conditions, "Ready", "False", "Ok", "m",
                                   last_transition_time=later)
    assert flipped[0].last_transition_time == later


def test_find_remove_and_is_true() -> None:
    conditions = (cond("Ready"), cond("Stalled", "False"))  # any Sequence
    assert find_status_condition(conditions, "Stalled") == conditions[1]
    assert find_status_condition(conditions, "Missing") is None
    assert find_status_condition(None, "Ready") is None
    assert is_status_condition_true(conditions, "Ready")
    assert not is_status_condition_true(conditions, "Stalled")
    assert not is_status_condition_true(conditions, "Missing")
    assert remove_status_condition(conditions, "Missing") == list(conditions)
    assert [c.type for c in remove_status_condition(conditions, "Ready")] == ["Stalled"]


def test_decode_and_convert_accept_any_struct() -> None:
    raw = {"type": "Ready", "status": "True", "reason": "Ok", "message": "",
           "lastTransitionTime": "2026-01-01T00:00:00Z"}
    one: Condition = api.decode(Condition, raw)
    assert one.last_transition_time == T0
    assert api.decode(Condition, b'{"type": "Ready", "status": "True", "reason": "Ok",'
                      b' "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}') == one
    many: list[Condition] = api.convert(list[Condition], [raw])
    assert many == [one]


def test_set_already_owned_turns_ready_false_with_the_refusal() -> None:
    err = pyctrl.AlreadyOwned("settings", {"kind": "Backup", "name": "other", "uid": "u"},
                              namespace="ns", kind="ConfigMap")
    conditions = pyctrl.set_status_condition([], "Ready", "True", "Available", clock=FakeClock())
    out = pyctrl.set_already_owned(conditions, err, observed_generation=3, clock=FakeClock())
    (ready,) = out
    assert (ready.type, ready.status, ready.reason, ready.observed_generation) == (
        "Ready", "False", "AlreadyOwned", 3)
    assert ready.message == ("ConfigMap 'settings' is already controlled by Backup 'other' "
                             "(namespace 'ns')")
