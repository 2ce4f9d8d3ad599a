"""Failover in real time: SIGKILL the leading replica around minute ticks, lose no run.

Two ``python -m cronjob_controller --leader-elect`` processes (lease 4 s, renew deadline 3 s,
retry 0.5 s) share a namespace of ``* * * * *`` CronJobs. Around three consecutive real minute
ticks T1..T3 the current leader (the Lease's holderIdentity, mapped to a process through the
identity each replica logs at start) is SIGKILLed: 2 s before T1, 0.15 s after T2 (while it
creates T2's Jobs, due at T2 + 0.1 s, or before their deferred status writes) and 2 s before
T3; a fresh replica replaces it at once, so two are always around. The standby takes over
once the dead leader's lease expires, a few seconds late for the tick. There is no
startingDeadlineSeconds, so every run that came due during a failover must still be started
by the new leader.

Asserted: each kill was followed by a different, live leader; no CronJob has two Jobs for one
scheduled time; every CronJob has a Job for every tick from the first observed one to T3 and
ends with ``lastScheduleTime`` = T3; and every replica stopped gracefully (exit 0).

Real time: this test takes 2.5-3.5 minutes (it waits for T1 to be at least 12 s away).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronjob_controller.api import CRONJOBS
from pyctrl.kube import RESTClient
from pyctrl.testing.envtest import ControlPlane
from pyctrl.testing.envtest.process import Proc
from tests.integration.chaos.helpers import assert_exactly_once, list_jobs, run_ledger
from tests.integration.controller_procs import ControllerProcs, logged_identity
from tests.integration.cronjob.env import cronjob_body, minute_floor, wait_for
from tests.waiting import pause_until

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(330)]

LEASE_NAME = "pyctrl-cronjob-controller"
CRONJOB_COUNT = 20
ELECTION_FLAGS = ["--leader-elect-lease-duration", "4", "--leader-elect-renew-deadline", "3",
                  "--leader-elect-retry-period", "0.5"]


class Replicas(ControllerProcs):
    """The controller processes of one test, found by the identity each one logs."""

    def start(self) -> Proc:
        name = f"replica-{len(self.procs)}"
        proc = self.spawn(name, [
            "--workers", "4", "--leader-elect", "--leader-elect-namespace", self.namespace,
            *ELECTION_FLAGS, "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
            "--graceful-shutdown-timeout", "5", "--log-format", "json", "--log-level", "info"])
        wait_for(lambda: self.identity(proc), timeout=30, what=f"{name} to start")
        return proc

    def identity(self, proc: Proc) -> str | None:
        return logged_identity(proc)

    def live_leader(self) -> Proc | None:
        holder = self.holder(LEASE_NAME)
        return next((p for p in self.procs.values()
                     if p.running() and self.identity(p) == holder),
                    None)

    def wait_leader(self, timeout: float = 30.0) -> Proc:
        leader: Proc = wait_for(self.live_leader, timeout=timeout, what="a live leader")
        return leader


@pytest.fixture
def replicas(chaos_plane: ControlPlane, chaos_client: RESTClient, chaos_namespace: str,
             tmp_path: Path) -> Iterator[Replicas]:
    reps = Replicas(chaos_plane, chaos_client, chaos_namespace, tmp_path)
    try:
        yield reps
    finally:
        reps.stop_all()


def _sleep_until(when: datetime) -> None:
    """Act at a wall-clock instant: this test kills leaders around real minute ticks."""
    pause_until(when)


def test_leader_sigkill_around_ticks_loses_and_duplicates_no_run(
    replicas: Replicas, chaos_client: RESTClient, chaos_namespace: str
) -> None:
    names = [f"fo-{i:02d}" for i in range(CRONJOB_COUNT)]
    for name in names:
        chaos_client.create(CRONJOBS, cronjob_body(name), chaos_namespace)
    first = replicas.start()
    assert replicas.wait_leader() is first
    replicas.start()  # the standby: warms its informers while it waits for the lease

    now = datetime.now(UTC)
    t1 = minute_floor(now) + timedelta(minutes=1)
    if (t1 - now).total_seconds() < 12:
        t1 += timedelta(minutes=1)
    ticks = [t1, t1 + timedelta(minutes=1), t1 + timedelta(minutes=2)]
    # Before T1: the successor starts T1's runs late. Just after T2: the leader dies while
    # creating T2's Jobs or before writing their (deferred) statuses. Before T3: as T1.
    kill_at = [ticks[0] - timedelta(seconds=2), ticks[1] + timedelta(seconds=0.15),
               ticks[2] - timedelta(seconds=2)]

    leaders: list[str | None] = [replicas.identity(first)]
    for when in kill_at:
        victim = replicas.wait_leader(timeout=max(30.0, (when - datetime.now(UTC))
                                                  .total_seconds()))
        _sleep_until(when)
        victim = replicas.wait_leader()  # still the same one, unless it lost the lease
        victim.kill()
        replicas.start()  # two replicas stay around
        successor = replicas.wait_leader()
        assert successor is not victim
        leaders.append(replicas.identity(successor))

    last = ticks[-1].strftime("%Y-%m-%dT%H:%M:%SZ")

    def complete() -> bool:
        ledger = run_ledger(list_jobs(chaos_client, chaos_namespace))
        statuses = {o["metadata"]["name"]: o.get("status") or {}
                    for o in chaos_client.list(CRONJOBS, chaos_namespace)["items"]}
        # The status write after a create is deferred: a successor must recover it.
        return all(t in ledger.get(n, {}) for n in names for t in ticks) and all(
            statuses[n].get("lastScheduleTime") == last for n in names)

    try:
        wait_for(complete, timeout=45,
                 what="a Job of every CronJob for every tick, and its lastScheduleTime")
    except AssertionError as err:
        raise AssertionError(f"{err}\n{replicas.logs()}") from None
    replicas.stop_all()

    assert len(set(leaders)) == len(leaders), f"each failover has a new leader: {leaders}"
    jobs = list_jobs(chaos_client, chaos_namespace)
    observed = sorted({t for runs in run_ledger(jobs).values() for t in runs})
    assert observed[0] <= ticks[0]
    assert_exactly_once(jobs, names, observed[0], ticks[-1])
    assert all(code == 0 for code in replicas.exit_codes.values()), (
        f"graceful stop: {replicas.exit_codes}\n{replicas.logs()}")
