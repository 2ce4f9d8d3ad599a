"""Conditions: apimachinery meta.SetStatusCondition semantics on plain dicts."""

from __future__ import annotations

from datetime import timedelta

from pyctrl.conditions import (
    Condition,
    find_status_condition,
    is_status_condition_true,
    remove_status_condition,
    set_status_condition,
)
from pyctrl.kube.resource import CONFIGMAPS
from pyctrl.testing import FakeClient, FakeClock


def ready(status: str, reason: str = "Ok", **extra: object) -> Condition:
    return {"type": "Ready", "status": status, "reason": reason, "message": "m", **extra}


def test_new_condition_gets_now_and_an_existing_one_keeps_its_time() -> None:
    clock = FakeClock()
    conditions: list[Condition] = []
    assert set_status_condition(conditions, ready("True"), clock=clock)
    assert conditions[0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    clock.step(60)
    # Same status, new reason: updated, but the transition time stays.
    assert set_status_condition(conditions, ready("True", "StillOk", observedGeneration=2),
                                clock=clock)
    assert conditions == [{**ready("True", "StillOk", observedGeneration=2),
                           "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    assert not set_status_condition(conditions, ready("True", "StillOk"), clock=clock)
    # Status flips: the transition time moves to now.
    assert set_status_condition(conditions, ready("False", "Broken"), clock=clock)
    assert conditions[0]["lastTransitionTime"] == "2026-01-01T00:01:00Z"
    assert conditions[0]["status"] == "False" and conditions[0]["reason"] == "Broken"


def test_given_transition_time_is_used_when_status_changes() -> None:
    clock = FakeClock()
    conditions: list[Condition] = [ready("True", lastTransitionTime="2025-01-01T00:00:00Z")]
    set_status_condition(conditions, ready("True", lastTransitionTime="2025-06-01T00:00:00Z"),
                         clock=clock)
    assert conditions[0]["lastTransitionTime"] == "2025-01-01T00:00:00Z"
    set_status_condition(conditions, ready("False", lastTransitionTime="2025-06-01T00:00:00Z"),
                         clock=clock)
    assert conditions[0]["lastTransitionTime"] == "2025-06-01T00:00:00Z"


def test_find_remove_and_is_true() -> None:
    conditions: list[Condition] = [ready("True"), {"type": "Stalled", "status": "False"}]
    assert find_status_condition(conditions, "Stalled") == {"type": "Stalled", "status": "False"}
    assert find_status_condition(conditions, "Missing") is None
    assert find_status_condition(None, "Ready") is None
    assert is_status_condition_true(conditions, "Ready")
    assert not is_status_condition_true(conditions, "Stalled")
    assert remove_status_condition(conditions, "Ready")
    assert not remove_status_condition(conditions, "Ready")
    assert [c["type"] for c in conditions] == ["Stalled"]


def test_status_written_through_the_client_keeps_transition_time() -> None:
    clock = FakeClock()
    client = FakeClient(clock)
    client.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns"}})

    def write(status: str) -> None:
        obj = client.get(CONFIGMAPS, "c", "ns")
        conditions = obj.setdefault("status", {}).setdefault("conditions", [])
        if set_status_condition(conditions, ready(status), clock=clock):
            client.update(CONFIGMAPS, obj, "ns")

    write("True")
    rv = client.get(CONFIGMAPS, "c", "ns")["metadata"]["resourceVersion"]
    clock.step(timedelta(minutes=5).total_seconds())
    write("True")  # nothing changed: no write at all
    stored = client.get(CONFIGMAPS, "c", "ns")
    assert stored["metadata"]["resourceVersion"] == rv
    assert stored["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
