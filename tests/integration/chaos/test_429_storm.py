"""A 429 storm from API Priority and Fairness, with the controller's default flags.

The controller runs as its manifests' ServiceAccount (manifests/base RBAC, a TokenRequest
token) with no rate-limit flags, so with no client-side limit (issue 25 item 4). A FlowSchema
puts every request of that ServiceAccount in a PriorityLevelConfiguration of the smallest
share (nominalConcurrencyShares 1, no borrowing, limitResponse Reject): a few seats, and
every request beyond them is answered 429 at once with Retry-After. 60 ``* * * * *``
CronJobs then fire together and the 16 workers' creates and status writes storm those seats.

Asserted: kube-apiserver rejected requests of that priority level (the storm happened);
every CronJob still got exactly one Job for the tick and its ``lastScheduleTime``; the
controller is still running and logged no traceback (a 429 is retried after its Retry-After
by the client, and what still fails is one line, pyctrl._errorlog).

Real time: 1-2 minutes (the tick is the first at least 12 s after the controller is up).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from cronjob_controller.api import CRONJOBS
from pyctrl.kube import RESTClient
from pyctrl.testing.envtest import ControlPlane
from tests.integration.chaos.helpers import list_jobs, run_ledger
from tests.integration.controller_procs import ROOT, ControllerProcs
from tests.integration.cronjob.env import cronjob_body, minute_floor, wait_for
from tests.waiting import pause_until

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(300)]

CRONJOB_COUNT = 60
SYSTEM_NS = "pyctrl-system"
LEVEL = "pyctrl-test-storm"
APF = [
    {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
     "metadata": {"name": LEVEL},
     "spec": {"type": "Limited", "limited": {
         "nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 0,
         "limitResponse": {"type": "Reject"}}}},
    {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
     "metadata": {"name": LEVEL},
     "spec": {"priorityLevelConfiguration": {"name": LEVEL}, "matchingPrecedence": 500,
              "distinguisherMethod": {"type": "ByUser"},
              "rules": [{
                  "subjects": [{"kind": "ServiceAccount", "serviceAccount": {
                      "name": "cronjob-controller", "namespace": SYSTEM_NS}}],
                  "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                     "namespaces": ["*"], "clusterScope": True}],
                  "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}},
]


def _rejected(plane: ControlPlane) -> float:
    """Requests of LEVEL that APF rejected so far (its own metric, not the client's)."""
    status, body = plane.http.request("GET", "/metrics", timeout=10.0)
    assert status == 200 and isinstance(body, str), status
    return sum(float(line.rsplit(" ", 1)[1]) for line in body.splitlines()
               if line.startswith("apiserver_flowcontrol_rejected_requests_total{")
               and f'priority_level="{LEVEL}"' in line)


@pytest.fixture
def storm_kubeconfig(chaos_plane: ControlPlane, tmp_path: Path) -> Iterator[Path]:
    for name in ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml"):
        chaos_plane.kubectl("apply", "-f", str(ROOT / "manifests" / "base" / name))
    chaos_plane.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(APF))
    token = chaos_plane.kubectl("create", "token", "cronjob-controller", "-n", SYSTEM_NS,
                                "--duration=1h").stdout.strip()
    try:
        yield chaos_plane.write_token_kubeconfig(token, tmp_path / "sa.kubeconfig")
    finally:
        chaos_plane.kubectl("delete", "flowschema,prioritylevelconfiguration", LEVEL,
                            "--ignore-not-found", check=False)


def test_apf_429_storm_with_default_flags_loses_and_duplicates_no_run(
    procs: ControllerProcs, storm_kubeconfig: Path, chaos_plane: ControlPlane,
    chaos_client: RESTClient, chaos_namespace: str,
) -> None:
    names = [f"storm-{i:02d}" for i in range(CRONJOB_COUNT)]
    for name in names:
        chaos_client.create(CRONJOBS, cronjob_body(name), chaos_namespace)
    rejected_before = _rejected(chaos_plane)
    # ControllerProcs passes the admin kubeconfig first; the later --kubeconfig wins.
    proc = procs.spawn("controller", [
        "--kubeconfig", str(storm_kubeconfig), "--workers", "16",
        "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
        "--log-format", "json", "--log-level", "info"])
    wait_for(lambda: '"starting workers"' in proc.log_path.read_text(errors="replace"),
             timeout=90, what=f"the controller's workers\n{proc.log_tail()}")

    now = datetime.now(UTC)
    tick = minute_floor(now) + timedelta(minutes=1)
    if (tick - now).total_seconds() < 12:
        tick += timedelta(minutes=1)
    pause_until(tick)
    last = tick.strftime("%Y-%m-%dT%H:%M:%SZ")

    def done() -> bool:
        ledger = run_ledger(list_jobs(chaos_client, chaos_namespace))
        statuses = {o["metadata"]["name"]: o.get("status") or {}
                    for o in chaos_client.list(CRONJOBS, chaos_namespace)["items"]}
        return all(tick in ledger.get(n, {}) for n in names) and all(
            statuses[n].get("lastScheduleTime") == last for n in names)

    try:
        wait_for(done, timeout=120, what=f"a Job and lastScheduleTime of every CronJob for "
                                         f"{tick}")
    except AssertionError as err:
        raise AssertionError(f"{err}\n{proc.log_tail()}") from None
    rejected = _rejected(chaos_plane) - rejected_before
    assert rejected > 0, "APF rejected nothing: there was no storm to survive"
    ledger = run_ledger(list_jobs(chaos_client, chaos_namespace))
    dupes = {n: runs[tick] for n, runs in ledger.items() if len(runs.get(tick, [])) > 1}
    assert not dupes, f"duplicate runs: {dupes}"
    assert proc.running(), proc.log_tail()
    assert "Traceback" not in proc.log_path.read_text(errors="replace")
    print(f"APF rejected {rejected:.0f} requests of the controller over the tick")
