"""Sharding at scale: 3 replica processes, N CronJobs, the leader SIGKILLed mid-tick.

N is ``PYCTRL_SCALE_CRONJOBS``: 300 in ``make test`` (in the parallel stage), 3000 (the
issue's scale) in ``make scale``, which CI runs after ``make test`` (docs/DEVELOPMENT.md,
"The scale test", says what each size proves). Every assertion holds at every size.

Three ``python -m cronjob_controller --sharding`` processes (shard Lease and leader Lease 8 s,
renew deadline 6 s, retry 1.5 s; 8 workers each) share the N CronJobs, every one due once at
the same real minute tick T (the schedule names T's minute and hour; T is the first minute
boundary at least ``SETUP`` seconds after the test starts, so the test waits for it).

1. The CronJobs are spread over the three shards by the ring (labels only; each replica's
   informers see only its own).
2. In the middle of the tick's Job creates (once a watch has seen the leader create a fifth
   of its shard's Jobs, or ``KILL_BY`` seconds after T at the latest), the replica that leads
   (runs the sharder) is SIGKILLed, so the worst case is measured: its own shard's CronJobs
   (about N/3) wait for its shard Lease to expire *and* for a new leader whose sharder moves
   them. Both Leases are watched by every replica from its start
   (``pyctrl.sharding.ShardWatch``): the new leader's retry lands on the leader Lease's
   expiry and its first pass moves the dead shard's CronJobs at once. Times come from a watch
   of the CronJobs. The goals (first move within lease duration + 2 s of the kill, all of
   them by then plus 1/100 s per moved CronJob) are printed; every CronJob moving within
   lease + 60 s is asserted. After T: exactly one Job per CronJob, the one for T (0
   duplicates, 0 missed runs), although the victim died in the middle of creating its Jobs.
3. A replacement replica joins (three again), then a fourth: exactly the CronJobs the ring
   moves to it move (about 1/4), each through the drain handshake (drain asked, the old shard
   lets go, only then the new shard's label).
4. No CronJob was reconciled by two replicas at overlapping times: every replica logs each
   owned reconcile's span (``shard reconcile``, debug, the host's monotonic clock), including
   the killed one up to its death.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cronjob_controller.api import CRONJOBS
from cronjob_controller.jobs import job_name
from pyctrl import RESTClient
from pyctrl.errors import ServerTimeout, Timeout
from pyctrl.kube import JOBS
from pyctrl.sharding import HashRing
from pyctrl.testing.envtest import ControlPlane
from pyctrl.testing.envtest.process import Proc
from tests.integration.controller_procs import ControllerProcs
from tests.integration.cronjob.env import cronjob_body
from tests.integration.sharding_helpers import (
    DRAIN_LABEL,
    SHARD_LABEL,
    WALL,
    LabelHistory,
    overlapping,
)
from tests.waiting import pause_until, poll

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
COUNT = int(os.environ.get("PYCTRL_SCALE_CRONJOBS", "300"))
LEASE = 8.0
# Seconds from the start to the earliest T (T is the first minute boundary after it): room to
# start the replicas, create the CronJobs and spread them. At 3000, with one core kept busy
# and another process running tests, creating them once took 59 s and spreading them 65 s,
# and at load 10 they were created in 121 s and spread 137 s after the first: 150 s. The
# per-CronJob part scales with N; the fixed part (three processes starting, a leader
# elected) does not.
SETUP = 30.0 + 0.04 * COUNT
RELABEL_FLOOR = 100.0  # relabels/s of a failover under the tick's load (see the docstring)
KILL_SHARE = 0.2  # mid-tick: kill once the victim has created this share of its Jobs...
KILL_BY = 10.0  # ...or this many seconds after T, whichever comes first
LEADER_LEASE = "pyctrl-cronjob-controller"
FLAGS = ["--leader-elect-lease-duration", "8", "--leader-elect-renew-deadline", "6",
         "--leader-elect-retry-period", "1.5", "--workers", "8", "--qps", "500",
         "--burst", "1000", "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
         "--graceful-shutdown-timeout", "5", "--log-format", "json", "--log-level", "debug"]


class Replicas(ControllerProcs):
    """The replica processes of the test, by shard name (also their POD_NAME)."""

    def start(self, name: str) -> Proc:
        return self.spawn(name, ["--sharding", "--shard-id", name,
                                 "--leader-elect-namespace", self.namespace, *FLAGS],
                          env={"POD_NAME": name})

    def leader(self) -> str | None:
        """The shard whose process holds the leader Lease (identity ``<POD_NAME>_<id>``)."""
        name = str(self.holder(LEADER_LEASE) or "").rpartition("_")[0]
        return name if name in self.procs and self.procs[name].running() else None

    def labels(self) -> dict[str, str | None]:
        items = self.client.list(CRONJOBS, self.namespace)["items"]
        return {o["metadata"]["name"]: (o["metadata"].get("labels") or {}).get(SHARD_LABEL)
                for o in items}

    def converged(self, shards: set[str]) -> dict[str, str | None] | None:
        """The labels once every CronJob carries its ring shard of ``shards``, none drains;
        None until then, and for a LIST the loaded API server did not answer in time (at
        3000 and load 3-11 one took over the client's 30 s): the caller polls again."""
        try:
            items = self.client.list(CRONJOBS, self.namespace)["items"]
        except (Timeout, ServerTimeout):
            return None
        ring = HashRing(shards)
        labels = {}
        for o in items:
            meta = o["metadata"]
            got = meta.get("labels") or {}
            if DRAIN_LABEL in got:
                return None
            labels[meta["name"]] = got.get(SHARD_LABEL)
            if labels[meta["name"]] != ring.shard_for(f"{self.namespace}/{meta['name']}"):
                return None
        return labels if len(labels) == COUNT else None

    def audit(self) -> list[tuple[str, str, float, float]]:
        """(shard, key, start, end) of every owned reconcile every replica logged."""
        out = []
        for name, proc in self.procs.items():
            for line in proc.log_path.read_text(errors="replace").splitlines():
                if '"shard reconcile"' not in line:
                    continue
                entry = json.loads(line)
                out.append((name, str(entry["key"]), float(entry["start"]),
                            float(entry["end"])))
        return out


class JobsSeen:
    """Counts the Jobs a watch sees created in the namespace, by owner CronJob name."""

    def __init__(self, client: RESTClient, namespace: str) -> None:
        rv = client.list(JOBS, namespace, limit=1)["metadata"]["resourceVersion"]
        self.owners: Counter[str] = Counter()
        self._stream = client.watch(JOBS, namespace, resource_version=rv, timeout_seconds=600)
        self._thread = threading.Thread(target=self._run, name="jobs-seen", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for event in self._stream:
                if event.get("type") == "ADDED":
                    refs = event["object"]["metadata"].get("ownerReferences") or [{}]
                    self.owners[str(refs[0].get("name"))] += 1
        except Exception:  # closed by stop(); a stream that ends only stops the counting
            return

    def count(self, names: list[str]) -> int:
        return sum(self.owners.get(n, 0) for n in names)

    def stop(self) -> None:
        self._stream.close()
        self._thread.join(10)


@pytest.fixture
def replicas(control_plane: ControlPlane, client: RESTClient, namespace: str,
             tmp_path: Path) -> Iterator[Replicas]:
    reps = Replicas(control_plane, client, namespace, tmp_path)
    try:
        yield reps
    finally:
        reps.stop_all()


def test_three_replicas_on_many_cronjobs_survive_a_leader_sigkill_and_rebalance_to_four(
        replicas: Replicas, client: RESTClient, namespace: str) -> None:
    r = replicas
    now = datetime.now(UTC)
    tick = (now + timedelta(seconds=SETUP + 60)).replace(second=0, microsecond=0)
    schedule = f"{tick.minute} {tick.hour} * * *"
    for name in ("s-a", "s-b", "s-c"):
        r.start(name)

    def create(i: int) -> None:
        client.create(CRONJOBS, cronjob_body(f"cj-{i:04d}", schedule), namespace)

    started = time.monotonic()
    with ThreadPoolExecutor(16) as pool:  # assigned as they appear
        list(pool.map(create, range(COUNT)))
    created = time.monotonic() - started

    # 1. Spread over three shards by the ring.
    labels = poll(lambda: r.converged({"s-a", "s-b", "s-c"}), timeout=90, interval=1.0)
    assert labels is not None, (Counter(r.labels().values()), r.logs())
    share = Counter(labels.values())
    print(f"\n{COUNT} CronJobs created in {created:.1f} s, converged "
          f"{time.monotonic() - started:.1f} s after the first; shares {dict(share)}")
    assert set(share) == {"s-a", "s-b", "s-c"}
    victim = poll(r.leader, timeout=30)
    assert victim is not None, r.logs()

    # 2. SIGKILL the leader in the middle of its part of T's burst of Job creates.
    assert datetime.now(UTC) < tick - timedelta(seconds=2), "setup too slow for T"
    theirs = sorted(k for k, v in labels.items() if v == victim)
    moves = LabelHistory(client, namespace)
    seen = JobsSeen(client, namespace)
    pause_until(tick)
    poll(lambda: seen.count(theirs) >= max(1, KILL_SHARE * len(theirs)), timeout=KILL_BY,
         interval=0.02)
    killed = WALL.time()
    before_kill = seen.count(theirs)
    r.procs[victim].kill()
    seen.stop()
    picked_up = poll(lambda: all(moves.left(k, victim) for k in theirs), timeout=LEASE + 60,
                     interval=0.2)
    moves.stop()
    times = [t for k in theirs if (t := moves.left(k, victim)) is not None]
    assert picked_up, f"{len(theirs) - len(times)} of {len(theirs)} never moved\n{r.logs()}"
    first, last = min(times) - killed, max(times) - killed
    new_leader = r.leader()
    print(f"killed leader {victim} {killed - tick.timestamp():.2f} s after T, its Jobs seen "
          f"created by then: {before_kill} of {len(theirs)}")
    print(f"killed leader {victim}: its {len(theirs)} CronJobs moved {first:.2f}-{last:.2f} s "
          f"after the kill (goal <= {LEASE + 2:.0f} s); new leader {new_leader}; label watch "
          f"restarts: {moves.errors}")
    # The goals (first move within lease + 2 s, all within that plus one relabel per
    # 1/RELABEL_FLOOR s) are speed figures: printed, not asserted (house rule). Under
    # make test's four xdist workers on 2 cores they depend on the neighbours' load; the
    # liveness (every CronJob moved within lease + 60 s) is asserted above.
    budget = LEASE + 2.0 + len(theirs) / RELABEL_FLOOR
    print(f"goals: first move {first:.2f} <= {LEASE + 2:.1f} s: {first <= LEASE + 2}; "
          f"last {last:.2f} <= {budget:.1f} s: {last <= budget}")

    expected = {job_name(f"cj-{i:04d}", tick) for i in range(COUNT)}
    assert poll(lambda: len(client.list(JOBS, namespace)["items"]) >= COUNT, timeout=120,
                interval=1.0), len(client.list(JOBS, namespace)["items"])
    jobs = client.list(JOBS, namespace)["items"]
    per_owner = Counter(j["metadata"]["ownerReferences"][0]["name"] for j in jobs)
    assert {n for n, k in per_owner.items() if k > 1} == set(), "duplicate Jobs"
    assert {j["metadata"]["name"] for j in jobs} == expected, "missed or extra runs"

    # 3. A replacement, then a fourth replica: exactly the ring's moves, each drained first.
    live = {"s-a", "s-b", "s-c", "s-e"} - {victim}
    r.start("s-e")
    assert poll(lambda: r.converged(live), timeout=120, interval=1.0), (
        Counter(r.labels().values()), r.logs())
    before = r.labels()
    history = LabelHistory(client, namespace)
    r.start("s-d")
    live.add("s-d")
    after = poll(lambda: r.converged(live), timeout=120, interval=1.0)
    assert after is not None, (Counter(r.labels().values()), r.logs())
    moved = {k for k in after if after[k] != before[k]}

    def caught_up() -> bool:
        return all(history.states.get(k, [])[-1:] == [(after[k], None)] for k in moved)

    assert poll(caught_up, timeout=30), "label watch never caught up"
    history.stop()
    old_ring, new_ring = HashRing(live - {"s-d"}), HashRing(live)
    predicted = {k for k in after if old_ring.shard_for(f"{namespace}/{k}")
                 != new_ring.shard_for(f"{namespace}/{k}")}
    print(f"fourth replica: {len(moved)} of {COUNT} moved ({len(moved) / COUNT:.1%})")
    assert moved == predicted and all(after[k] == "s-d" for k in moved)
    assert 0.15 * COUNT <= len(moved) <= 0.35 * COUNT, len(moved)
    # A leading (old shard, no drain) state is the steady state before the move, seen when
    # some other write (e.g. the adoption removing its handover annotation, or a status
    # write) reached the watch first: CI's clean-clone run saw it for 6 keys.
    def steps(k: str) -> list[tuple[str | None, str | None]] | None:
        states = history.states.get(k)
        return states[1:] if states and states[0] == (before[k], None) else states

    wrong = {k: history.states.get(k) for k in moved
             if steps(k) != [(before[k], "true"), (None, None), ("s-d", None)]}
    assert wrong == {}, list(wrong.items())[:5]

    # 4. No key reconciled by two replicas at once; survivors stop cleanly.
    codes = r.stop_all()
    records = r.audit()
    assert len({key for _, key, _, _ in records}) == COUNT, "every CronJob was reconciled"
    assert overlapping(records) == [], "a CronJob was reconciled by two replicas at once"
    assert all(code == 0 for code in codes.values()), codes
