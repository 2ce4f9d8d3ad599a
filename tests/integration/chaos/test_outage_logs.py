"""Logs under an apiserver outage: small, traceback-free, and still naming the cause.

``python -m cronjob_controller`` (default rate limits, JSON logs at info) runs 50
``* * * * *`` CronJobs. kube-apiserver is stopped 5 s before a minute tick T and started
again 20 s later, so the tick's reconciles, the watches, the event writes and the status
writes all meet refused connections. Asserted: the controller wrote less than 100 KB of log
from the stop until every CronJob has its Job for T (before pyctrl._errorlog: 9.6 MiB of
tracebacks for an outage like this), none of it a traceback, and the cause ("refused") is
named in it; the controller recovered on its own (every Job for T was created) and is still
running.

Real time: 1-2 minutes (T is the first tick at least 12 s after the controller is up).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronjob_controller.api import CRONJOBS
from pyctrl.kube import RESTClient
from pyctrl.testing.envtest import ControlPlane
from tests.integration.chaos.helpers import list_jobs, run_ledger
from tests.integration.controller_procs import ControllerProcs
from tests.integration.cronjob.env import cronjob_body, minute_floor, wait_for
from tests.waiting import pause_until

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(300)]

CRONJOB_COUNT = 50
OUTAGE = timedelta(seconds=20)
LOG_BUDGET = 100 * 1024


def _started(path: Path) -> bool:
    try:
        return '"starting workers"' in path.read_text(errors="replace")
    except OSError:
        return False


def test_apiserver_outage_logs_stay_small_name_the_cause_and_recover(
    procs: ControllerProcs, chaos_plane: ControlPlane, chaos_client: RESTClient,
    chaos_namespace: str,
) -> None:
    names = [f"out-{i:02d}" for i in range(CRONJOB_COUNT)]
    for name in names:
        chaos_client.create(CRONJOBS, cronjob_body(name), chaos_namespace)
    proc = procs.spawn("controller", [
        "--workers", "4", "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
        "--log-format", "json", "--log-level", "info"])
    wait_for(lambda: _started(proc.log_path), timeout=60, what="the controller's workers")

    now = datetime.now(UTC)
    tick = minute_floor(now) + timedelta(minutes=1)
    if (tick - now).total_seconds() < 12:
        tick += timedelta(minutes=1)
    pause_until(tick - timedelta(seconds=5))
    before = proc.log_path.stat().st_size
    chaos_plane.stop_apiserver()
    try:
        pause_until(tick - timedelta(seconds=5) + OUTAGE)
        assert proc.running(), f"the controller exited during the outage:\n{proc.log_tail()}"
    finally:
        chaos_plane.start_apiserver()

    def recovered() -> bool:
        ledger = run_ledger(list_jobs(chaos_client, chaos_namespace))
        return all(tick in ledger.get(n, {}) for n in names)

    try:
        wait_for(recovered, timeout=90, what=f"a Job of every CronJob for {tick}")
    except AssertionError as err:
        raise AssertionError(f"{err}\n{proc.log_tail()}") from None
    assert proc.running(), proc.log_tail()

    with proc.log_path.open("rb") as f:
        f.seek(before)
        written = f.read()
    lines = written.decode(errors="replace").splitlines()
    print(f"log over the outage: {len(written)} bytes, {len(lines)} lines")  # for -s runs
    assert len(written) < LOG_BUDGET, (
        f"{len(written)} bytes ({len(lines)} lines) of log over the outage; the first:\n"
        + "\n".join(lines[:20]))
    assert "Traceback" not in written.decode(errors="replace")
    entries = [json.loads(line) for line in lines if line.startswith("{")]
    causes = [e for e in entries if "refused" in str(e.get("message", "")).lower()]
    assert causes, "no line names the refused connection:\n" + "\n".join(lines[:20])
    assert any(e.get("event", "").startswith("reconcile failed") for e in causes), (
        "the failed reconciles were not logged with their cause")
