"""The CronJob sync of a stored CronJob that does not decode (a laxer CRD, the webhook off):
Ready=False InvalidSpec naming the field, one Warning, no Job, no hot loop; fixed, it runs.

Same fixture as test_controller.py: NOW = 12:00:30 UTC, schedule ``*/5 * * * *``.
"""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from cronjob_controller.api import CRONJOBS
from pyctrl.errors import Conflict
from pyctrl.testing import Action
from tests.unit.cronjob.sync_fixture import NAMESPACE, Fixture, new_cronjob

STATUS_PATCH = ("patch", "cronjobs", "hello", "status")

# (spec change, the field named, a piece of the problem)
POISONS: dict[str, tuple[dict[str, Any], str, str]] = {
    "wrong-enum": ({"concurrencyPolicy": "Sometimes"}, "spec.concurrencyPolicy",
                   "Invalid enum value 'Sometimes'"),
    "wrong-type": ({"suspend": "yes"}, "spec.suspend", "Expected `bool`, got `str`"),
    "out-of-range": ({"successfulJobsHistoryLimit": 2**31}, "spec.successfulJobsHistoryLimit",
                     "<= 2147483647"),
    "list-item": ({}, "status.active[0]", "Expected `object`"),
}


def poisoned(shape: str) -> dict[str, Any]:
    spec, _, _ = POISONS[shape]
    if shape == "list-item":
        return new_cronjob(status={"active": ["not-a-reference"]})
    return new_cronjob(**spec)


@pytest.mark.parametrize("shape", sorted(POISONS))
def test_undecodable_cronjob_gets_ready_false_one_warning_and_no_job(shape: str) -> None:
    f = Fixture()
    f.add_cronjob(poisoned(shape))
    _, field, problem = POISONS[shape]

    with capture_logs() as logs:
        result = f.sync()

    assert result is None  # no requeue: only a change of the object brings it back
    assert f.actions() == [STATUS_PATCH]  # no Job, no Job lookup
    assert f.events() == [("Warning", "InvalidSpec")]
    [message] = f.messages("InvalidSpec")
    assert field in message and problem in message
    ready = f.ready()
    assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
    assert ready["message"] == message
    stored = f.client.get_object(CRONJOBS, "hello", NAMESPACE)
    assert f.status()["observedGeneration"] == stored["metadata"]["generation"]
    assert [e["path"] for e in logs if e["event"] == "undecodable cronjob"] == [f"$.{field}"]
    # The status write's own update event (and any resync) finds it reported: nothing more.
    f.refresh()
    f.clear()
    assert f.sync() is None
    assert f.actions() == [] and f.events() == []


def test_status_write_carries_the_cached_resource_version_and_yields_to_a_newer_one() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(concurrencyPolicy="Sometimes"))

    refuse = [True]

    def conflict(action: Action) -> None:
        if action.verb == "patch" and refuse.pop() if refuse else False:
            raise Conflict("the object has been modified", 409, "Conflict")

    f.client.prepend_reactor("patch", "cronjobs", conflict)
    assert f.sync() is None  # the newer version's event brings the key back
    [patch] = [a.object for a in f.client.actions if a.verb == "patch"]
    assert patch["metadata"] == {"resourceVersion": cj["metadata"]["resourceVersion"]}
    assert set(patch["status"]) == {"conditions", "observedGeneration"}  # metadata only
    assert f.events() == []  # not reported yet: the next sync tries again
    f.sync()
    assert f.events() == [("Warning", "InvalidSpec")]


def test_fixing_the_cronjob_makes_it_an_ordinary_one_again() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(concurrencyPolicy="Sometimes"))
    f.settle()
    f.client.patch(CRONJOBS, "hello", {"spec": {"concurrencyPolicy": "Forbid"}}, NAMESPACE)
    f.refresh()
    f.clear()

    f.sync()

    assert f.events() == [("Normal", "SuccessfulCreate")]  # the due 12:00 run
    f.refresh()
    f.sync()  # the Job's event: the status write the create deferred
    ready = f.ready()
    assert (ready["status"], ready["reason"]) == ("True", "Scheduled")
    # Broken again the same way: reported again (the fix forgot the report).
    f.refresh()
    f.client.patch(CRONJOBS, "hello", {"spec": {"concurrencyPolicy": "Sometimes"}},
                   NAMESPACE)
    f.refresh()
    f.clear()
    f.sync()
    assert f.events() == [("Warning", "InvalidSpec")]
