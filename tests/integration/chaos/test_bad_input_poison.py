"""Poison CronJobs: stored objects that do not decode into the typed CronJob blind nothing.

The chaos control plane's lenient CRD lets ``spec.concurrencyPolicy``, ``spec.suspend``,
``spec.successfulJobsHistoryLimit`` and ``status.active`` hold any value (helpers.ANY_VALUE),
standing in for a laxer CRD version or the webhook off. Beside one valid CronJob in the same
namespace sit one poison CronJob per failure shape: a wrong enum value, a wrong type, an
integer out of its Int32 range, a list item of the wrong shape (missing required fields of a
CronJob are defaulted when decoded and reported by validation: test_bad_input.py).

Asserted: the controller's caches sync; the valid CronJob gets its Job at the minute tick;
every poison one gets ``Ready=False`` ``InvalidSpec`` naming its field and exactly one
Warning Event, no Job, and no status rewrite over the tick; once each is fixed, it becomes
Ready and gets its Job at the next tick.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from cronjob_controller.api import CRONJOBS
from cronjob_controller.jobs import job_name
from pyctrl.kube import RESTClient
from pyctrl.testing import FakeClock
from pyctrl.testing.envtest import ControlPlane
from tests.integration.cronjob.env import Env, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(240)]

# name -> (spec of the poison, its fix, the field the condition must name)
SPEC_POISONS: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "wrong-enum": ({"concurrencyPolicy": "Sometimes"}, {"concurrencyPolicy": "Allow"},
                   "spec.concurrencyPolicy"),
    "wrong-type": ({"suspend": "yes"}, {"suspend": False}, "spec.suspend"),
    "out-of-range": ({"successfulJobsHistoryLimit": 2**31},
                     {"successfulJobsHistoryLimit": 3}, "spec.successfulJobsHistoryLimit"),
}
LIST_ITEM = "list-item"  # status.active holds a string, not a Job reference


def test_poison_cronjobs_beside_a_valid_one_are_reported_and_block_nothing(
    chaos_plane: ControlPlane, chaos_client: RESTClient, chaos_namespace: str
) -> None:
    del chaos_plane
    ns = chaos_namespace
    env = Env(chaos_client, ns, FakeClock(datetime.now(UTC)))
    env.create_cronjob("valid")
    for name, (spec, _, _) in SPEC_POISONS.items():
        env.create_cronjob(name, **spec)
    env.create_cronjob(LIST_ITEM)
    chaos_client.patch(CRONJOBS, LIST_ITEM, {"status": {"active": ["not-a-reference"]}}, ns,
                       subresource="status")
    fields = {name: field for name, (_, _, field) in SPEC_POISONS.items()}
    fields[LIST_ITEM] = "status.active[0]"
    env.clock.set_time(datetime.now(UTC))  # not before any creationTimestamp
    try:
        env.start(workers=4)  # on main: the CronJob cache never syncs

        def reported() -> bool:
            return all((env.condition(n) or {}).get("reason") == "InvalidSpec"
                       and env.events("InvalidSpec", n) for n in fields)

        wait_for(reported, what="every poison CronJob's Ready=False and Warning")
        for name, field in fields.items():
            cond = env.condition(name) or {}
            assert cond["status"] == "False" and field in cond["message"], (name, cond)
        versions = {n: env.cronjob(n)["metadata"]["resourceVersion"] for n in fields}
        tick = env.next_minute()
        wait_for(env.has_job("valid", job_name("valid", tick)), what="the valid CronJob's Job")
        wait_for(lambda: (env.condition("valid") or {}).get("status") == "True",
                 what="the valid CronJob Ready")
        for name, field in fields.items():
            assert env.job_names(name) == set(), name
            [warning] = env.events("InvalidSpec", name)
            assert warning["type"] == "Warning" and warning.get("count", 1) == 1, warning
            assert field in warning["message"], warning
            assert env.cronjob(name)["metadata"]["resourceVersion"] == versions[name], (
                f"{name} was rewritten")
        # Fixed, each is an ordinary CronJob again.
        for name, (_, fix, _) in SPEC_POISONS.items():
            env.patch_spec(name, **fix)
        chaos_client.patch(CRONJOBS, LIST_ITEM, {"status": {"active": None}}, ns,
                           subresource="status")
        wait_for(lambda: all((env.condition(n) or {}).get("status") == "True" for n in fields),
                 what="every fixed CronJob Ready")
        tick = env.next_minute()
        for name in fields:
            wait_for(env.has_job(name, job_name(name, tick)), what=f"{name}'s Job once fixed")
    finally:
        env.stop_all()
