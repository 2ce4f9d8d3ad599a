"""Bad input flood: 100 invalid CronJobs next to 50 valid ones cost nothing per tick.

The chaos control plane serves a lenient CronJob CRD (no CEL rule, no ``required`` fields
under spec), standing in for objects that got past admission while the webhook was off. The
flood mixes bad schedules, unknown or forbidden time zones, 53-character names and missing
schedule / jobTemplate / jobTemplate.spec. The controller runs in-process on a FakeClock with
its own REST client whose ``rest_client_requests_total`` lives in a private registry.

Asserted, after the initial settle and over three minute ticks: every valid CronJob gets its
Job each tick; every invalid one has exactly one Warning event and a ``Ready=False``
condition naming the offending field, no Job, no requeues and no status rewrite; and the
controller's request count per tick stays within a small multiple of the number of VALID
CronJobs (a per-tick cost of even one request per invalid CronJob would exceed it).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cronjob_controller.api import CRONJOBS
from cronjob_controller.jobs import job_name
from pyctrl import Request
from pyctrl.kube import EVENTS, RESTClient
from pyctrl.testing import FakeClock
from pyctrl.testing.envtest import ControlPlane
from tests.integration.chaos.helpers import list_jobs, run_ledger
from tests.integration.cronjob.env import Env, cronjob_body, wait_for
from tests.waiting import steady

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(180)]

VALID = 50
TICKS = 3
# A valid CronJob costs about three requests a tick: create the Job, patch status, post the
# SuccessfulCreate event. Allow one more, plus a few watch restarts.
REQUESTS_PER_VALID_PER_TICK = 4
SLACK = 10

BAD_SCHEDULES = ["61 * * * *", "0 0 * * * *", "* * * *", "L * * * *", "TZ=UTC * * * * *",
                 "@every banana", "not a cron", "*/0 * * * *", "0 0 ? * MON#2"]
BAD_ZONES = ["Mars/Olympus_Mons", "Local", "UTC+2", "Europe/Atlantis", "America/Nowhere"]


def _invalid_bodies() -> list[tuple[dict[str, Any], str, str]]:
    """(body, Warning/condition reason, field the message must name), 100 of them."""
    out: list[tuple[dict[str, Any], str, str]] = []
    for i in range(30):
        out.append((cronjob_body(f"bad-sched-{i}", BAD_SCHEDULES[i % len(BAD_SCHEDULES)]),
                    "InvalidSchedule", "spec.schedule"))
    for i in range(25):
        body = cronjob_body(f"bad-zone-{i}", timeZone=BAD_ZONES[i % len(BAD_ZONES)])
        out.append((body, "UnknownTimeZone", "spec.timeZone"))
    for i in range(25):
        name = f"long-{i:02d}-".ljust(53, "x")
        out.append((cronjob_body(name), "InvalidSpec", "metadata.name"))
    for i in range(7):
        body = cronjob_body(f"no-template-{i}")
        del body["spec"]["jobTemplate"]
        out.append((body, "InvalidSpec", "spec.jobTemplate"))
    for i in range(7):
        body = cronjob_body(f"no-job-spec-{i}")
        del body["spec"]["jobTemplate"]["spec"]
        out.append((body, "InvalidSpec", "spec.jobTemplate.spec"))
    for i in range(6):
        body = cronjob_body(f"no-schedule-{i}")
        del body["spec"]["schedule"]
        out.append((body, "InvalidSchedule", "spec.schedule"))
    assert len(out) == 100
    return out


def _requests_total(registry: CollectorRegistry) -> float:
    return sum(s.value for metric in registry.collect() for s in metric.samples
               if s.name == "rest_client_requests_total")


def _quiet(registry: CollectorRegistry, still: float = 1.0, timeout: float = 30.0) -> float:
    """Wait until the request count has not moved for ``still`` seconds; return it."""
    return steady(lambda: _requests_total(registry), still, timeout, "the request count")


def test_invalid_cronjob_flood_is_reported_once_and_costs_nothing_per_tick(
    chaos_plane: ControlPlane, chaos_client: RESTClient, chaos_namespace: str
) -> None:
    ns = chaos_namespace
    env = Env(chaos_client, ns, FakeClock(datetime.now(UTC)))
    registry = CollectorRegistry()
    controller_client = RESTClient.from_kubeconfig(chaos_plane.kubeconfig_path, qps=500,
                                                   burst=1000, registry=registry)
    invalid = _invalid_bodies()
    valid = [f"ok-{i:02d}" for i in range(VALID)]
    for body, _, _ in invalid:
        chaos_client.create(CRONJOBS, copy.deepcopy(body), ns)
    for name in valid:
        env.create_cronjob(name)
    bad_names = {body["metadata"]["name"]: (reason, needle) for body, reason, needle in invalid}
    # Not before any creationTimestamp, so the first tick stepped to is due for every CronJob.
    env.clock.set_time(datetime.now(UTC))
    try:
        wired = env.start(workers=4, client=controller_client)

        def cronjobs() -> dict[str, dict[str, Any]]:
            return {o["metadata"]["name"]: o
                    for o in chaos_client.list(CRONJOBS, ns)["items"]}

        def ready(obj: dict[str, Any]) -> dict[str, Any]:
            conds = (obj.get("status") or {}).get("conditions") or []
            return next((c for c in conds if c.get("type") == "Ready"), {})

        def settled() -> bool:
            objs = cronjobs()
            warned = {e["involvedObject"]["name"]
                      for e in chaos_client.list(EVENTS, ns)["items"]
                      if e.get("type") == "Warning"}
            return (all(ready(objs[n]).get("status") == "False" for n in bad_names)
                    and all(ready(objs[n]).get("status") == "True" for n in valid)
                    and set(bad_names) <= warned)

        wait_for(settled, timeout=60, what="every CronJob to have its Ready condition")
        before = cronjobs()
        for name, (reason, needle) in bad_names.items():
            cond = ready(before[name])
            assert cond["reason"] == reason, (name, cond)
            assert needle in cond["message"], (name, cond)
        per_tick: list[float] = []
        count = _quiet(registry)
        for _ in range(TICKS):
            tick = env.next_minute()

            def ran(t: datetime = tick) -> bool:
                objs = cronjobs()
                have = env.job_names()
                return all(job_name(n, t) in have
                           and (objs[n].get("status") or {}).get("lastScheduleTime")
                           == t.strftime("%Y-%m-%dT%H:%M:%SZ") for n in valid)

            wait_for(ran, timeout=60, what=f"every valid CronJob to run at {tick}")
            now_count = _quiet(registry)
            per_tick.append(now_count - count)
            count = now_count

        bound = REQUESTS_PER_VALID_PER_TICK * VALID + SLACK
        assert max(per_tick) <= bound, f"requests per tick {per_tick} > {bound}"
        after = cronjobs()
        events = chaos_client.list(EVENTS, ns)["items"]
        ledger = run_ledger(list_jobs(chaos_client, ns))
        for name, (reason, needle) in bad_names.items():
            assert after[name]["metadata"]["resourceVersion"] == \
                before[name]["metadata"]["resourceVersion"], f"{name} was rewritten"
            warnings = [e for e in events if e["involvedObject"]["name"] == name
                        and e.get("type") == "Warning"]
            assert len(warnings) == 1 and warnings[0].get("count", 1) == 1, (name, warnings)
            assert warnings[0]["reason"] == reason and needle in warnings[0]["message"]
            assert name not in ledger
            assert wired.controller.queue.num_requeues(Request(ns, name)) == 0
        for name in valid:
            assert len(ledger[name]) == TICKS, (name, sorted(ledger[name]))
    finally:
        env.stop_all()
        controller_client.close()
