"""MissingJob like upstream, on the real API server: an active Job deleted by hand gives one
Normal ``MissingJob`` event "Active job went missing: NAME" and leaves ``status.active``; later
syncs neither report it again nor spin. (The FakeClock does not move after the first run, so
no second run is due during the test.)"""

from __future__ import annotations

import pytest

from cronjob_controller.jobs import job_name
from pyctrl import Request
from pyctrl.kube import JOBS
from tests.integration.cronjob.env import Env, wait_for

pytestmark = pytest.mark.integration


def _active(env: Env, name: str) -> list[str]:
    return [r["name"] for r in (env.cronjob(name).get("status") or {}).get("active") or []]


def test_active_job_deleted_by_hand_gives_one_missing_job_event(env: Env) -> None:
    env.create_cronjob("gone")
    wired = env.start()
    job = job_name("gone", env.next_minute())
    wait_for(lambda: _active(env, "gone") == [job], what="the Job listed active")

    env.client.delete(JOBS, job, env.namespace, propagation_policy="Background")

    events = wait_for(lambda: env.events("MissingJob", "gone"), what="MissingJob event")
    assert events[0]["type"] == "Normal"
    assert events[0]["message"] == f"Active job went missing: {job}"
    wait_for(lambda: _active(env, "gone") == [], what="the Job leaves active")
    # A later sync (a spec edit: observedGeneration moves) reports nothing more.
    env.patch_spec("gone", successfulJobsHistoryLimit=4)
    generation = env.cronjob("gone")["metadata"]["generation"]
    wait_for(lambda: (env.cronjob("gone").get("status") or {}).get("observedGeneration")
             == generation, what="the edit synced")
    assert [e.get("count", 1) for e in env.events("MissingJob", "gone")] == [1]
    assert wired.controller.queue.num_requeues(Request(env.namespace, "gone")) == 0
