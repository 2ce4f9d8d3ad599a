"""The pure parts of ``bench.cronjob_skew --shards S``: the phase list and flags, the replicas'
flags, the shard-label census, the per-replica figures, duplicates, and the issue-16 goal.

The sharded phase itself needs a control plane, S controller processes and real minutes;
these tests pin down what it reports and how it is judged.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import pytest

from bench.__main__ import _table
from bench.cronjob_skew import add_arguments
from bench.cronjob_skew.controllers import busiest_cores
from bench.cronjob_skew.probe import JobSeen
from bench.cronjob_skew.report import GOALS, SHARD_GOALS, duplicates, shard_ratios, verdict
from bench.cronjob_skew.shards import (
    DRAIN_LABEL,
    LEADER_LEASE,
    SHARD_LABEL,
    SHARDED,
    Census,
    ReplicaRun,
    census,
    leader_shard,
    replica_args,
    replicas,
    select_phases,
    shard_ids,
    sharded_fields,
    wait_labelled,
)
from pyctrl.errors import NotFound
from pyctrl.kube import RawObject, RESTClient
from pyctrl.sharding import HashRing
from pyctrl.testing.envtest import ControlPlane

TICK = datetime(2026, 11, 25, 12, 0, tzinfo=UTC).timestamp()
MINUTE = int(TICK) // 60
ANNOTATION = "batch.pyctrl.io/scheduled-timestamp"
NS = "skew-pyctrl-sharded"
IDS = ["shard-0", "shard-1", "shard-2"]


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


# -- phases and flags ------------------------------------------------------------------------
def test_shards_default_to_zero_and_todays_phases() -> None:
    args = _parse()
    assert (args.shards, args.all_phases, args.only) == (0, False, None)
    assert select_phases(args.only, args.shards, args.all_phases) == ["pyctrl", "upstream",
                                                                      "limit"]


def test_shards_run_the_single_replica_then_the_sharded_phase() -> None:
    args = _parse("--cronjobs", "6000", "--shards", "3")
    assert (args.cronjobs, args.shards) == (6000, 3)
    assert select_phases(args.only, args.shards, args.all_phases) == ["pyctrl", SHARDED]
    args = _parse("--shards", "3", "--all-phases")
    assert select_phases(args.only, args.shards, args.all_phases) == [
        "pyctrl", SHARDED, "upstream", "limit"]


def test_only_picks_one_phase_and_the_sharded_one_needs_shards() -> None:
    args = _parse("--shards", "2", "--only", SHARDED)
    assert select_phases(args.only, args.shards, args.all_phases) == [SHARDED]
    assert select_phases("upstream", 3, True) == ["upstream"]
    with pytest.raises(SystemExit, match="needs --shards"):
        select_phases(SHARDED, 0, False)
    with pytest.raises(SystemExit, match=">= 0"):
        select_phases(None, -1, False)
    with pytest.raises(SystemExit):
        _parse("--only", "nonsense")


def test_each_replica_gets_its_shard_its_leases_and_its_log(tmp_path: Path) -> None:
    assert shard_ids(3) == IDS
    assert replica_args("shard-1", NS) == [
        "--sharding", "--shard-id", "shard-1", "--leader-elect-namespace", NS,
        "--leader-elect-name", LEADER_LEASE, "--shard-leader-weight=1.0"]
    assert replica_args("shard-1", NS, 0.6)[-1] == "--shard-leader-weight=0.6"
    args = _parse("--shards", "3", "--pyctrl-workers", "8")
    built = replicas(cast(ControlPlane, object()), args, tmp_path, NS)
    assert [c.extra_env for c in built] == [{"POD_NAME": s} for s in IDS]
    assert [c.log_path.name for c in built] == [f"cronjob_controller-{s}.log" for s in IDS]
    assert all(c.python and c.phase == SHARDED for c in built)
    assert built[2].extra_args == replica_args("shard-2", NS, args.shard_leader_weight)


def test_busiest_cores_is_the_worst_process() -> None:
    assert busiest_cores([1.0, 2.0, 0.0], [1.1, 2.6, 0.3], 3.0) == pytest.approx(0.2)
    assert busiest_cores([5.0], [5.15], 3.0) == pytest.approx(0.05)
    assert busiest_cores([1.0], [2.0], 0.0) == float("inf")


# -- labels ----------------------------------------------------------------------------------
def _cronjob(i: int, shard: str | None, drain: bool = False) -> RawObject:
    labels: dict[str, str] = {}
    if shard is not None:
        labels[SHARD_LABEL] = shard
    if drain:
        labels[DRAIN_LABEL] = "true"
    return {"metadata": {"name": f"cj-{i:05d}", "namespace": NS, "labels": labels}}


def _on_ring(n: int) -> list[RawObject]:
    ring = HashRing(IDS)
    return [_cronjob(i, ring.shard_for(f"{NS}/cj-{i:05d}")) for i in range(n)]


def test_census_of_cronjobs_where_the_ring_puts_them_is_settled() -> None:
    seen = census(_on_ring(300), IDS)
    assert seen.settled and seen.total == 300
    assert sum(seen.owned.values()) == 300
    assert all(60 <= seen.owned[s] <= 140 for s in IDS)  # about a third each
    assert seen.owner["cj-00000"] == HashRing(IDS).shard_for(f"{NS}/cj-00000")


def test_census_counts_what_is_not_settled_yet() -> None:
    items = _on_ring(10)
    ring = HashRing(IDS)
    wrong = next(s for s in IDS if s != ring.shard_for(f"{NS}/cj-00003"))
    items[3] = _cronjob(3, wrong)  # a planned move not made yet
    items[4] = _cronjob(4, None)  # not assigned yet
    items[5] = _cronjob(5, "shard-9")  # a shard that is not running
    items[6] = _cronjob(6, ring.shard_for(f"{NS}/cj-00006"), drain=True)
    items[7]["metadata"]["annotations"] = {"handover.sharding.pyctrl.io/cronjob": "{}"}
    seen = census(items, IDS)
    assert (seen.off_ring, seen.unlabelled, seen.foreign, seen.draining,
            seen.handing_over) == (1, 1, 1, 1, 1)
    assert not seen.settled
    assert sum(seen.owned.values()) == 8  # the unlabelled and the foreign one are nobody's
    assert "cj-00004" not in seen.owner and seen.owner["cj-00005"] == "shard-9"
    assert seen.counts()["total"] == 10


class _Lister:
    """Just enough of a RESTClient for wait_labelled and leader_shard."""

    def __init__(self, items: list[RawObject], lease: RawObject | None = None) -> None:
        self.items, self.lease, self.lists = items, lease, 0

    def list(self, resource: object, namespace: str | None = None) -> RawObject:
        self.lists += 1
        return {"items": self.items}

    def get(self, resource: object, name: str, namespace: str | None = None) -> RawObject:
        if self.lease is None or name != LEADER_LEASE:
            raise NotFound("lease not found")
        return self.lease


def _no_exit() -> None:
    return None


def test_wait_labelled_returns_at_once_when_settled_and_at_the_timeout_when_not() -> None:
    args = argparse.Namespace(cronjobs=30, settle_timeout=0.0)
    lister = _Lister(_on_ring(30))
    client = cast(RESTClient, lister)
    done = wait_labelled(client, NS, IDS, 0.0, args, _no_exit)
    assert done["settled"] is True and done["polls"] == 1 and done["total"] == 30
    lister.items = [_cronjob(i, None) for i in range(30)]
    late = wait_labelled(client, NS, IDS, 0.0, args, _no_exit)
    assert late["settled"] is False and late["unlabelled"] == 30
    # all on the ring, but fewer CronJobs than created: not settled
    lister.items = _on_ring(20)
    assert wait_labelled(client, NS, IDS, 0.0, args, _no_exit)["settled"] is False


def test_leader_shard_is_the_holder_identitys_pod_name() -> None:
    lease = {"spec": {"holderIdentity": "shard-2_0a1b2c3d"}}
    assert leader_shard(cast(RESTClient, _Lister([], lease)), NS) == "shard-2"
    assert leader_shard(cast(RESTClient, _Lister([])), NS) is None
    assert leader_shard(cast(RESTClient, _Lister([], {"spec": {}})), NS) is None


# -- per-replica figures ---------------------------------------------------------------------
def _job(cronjob: str, after: float, minute: int = MINUTE, owner: bool = True,
         name: str | None = None) -> JobSeen:
    scheduled = datetime.fromtimestamp(minute * 60, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return JobSeen(name=name or f"{cronjob}-{minute}", seen_at=TICK + after,
                   created=TICK + after, annotations={ANNOTATION: scheduled},
                   owner=cronjob if owner else "")


def _usage(cpu: float | None, peak: float, hwm: float) -> dict[str, object]:
    return {"cpu_seconds": cpu, "peak_rss_mib": peak, "hwm_rss_mib": hwm, "rss_samples": 650}


def _census(owner: dict[str, str]) -> Census:
    owned = dict.fromkeys(IDS, 0)
    for shard in owner.values():
        owned[shard] += 1
    return Census(owner=owner, owned=owned, total=len(owner))


def test_sharded_fields_per_replica_and_totals() -> None:
    owner = {"cj-00000": "shard-0", "cj-00001": "shard-0", "cj-00002": "shard-1",
             "cj-00003": "shard-2"}
    at_window = _census(owner)
    after = _census(owner | {"cj-00003": "shard-1"})
    runs = [ReplicaRun("shard-0", 100, _usage(4.0, 80.0, 95.0), 1.5, "l0"),
            ReplicaRun("shard-1", 101, _usage(6.5, 90.0, 99.0), 1.25, "l1"),
            ReplicaRun("shard-2", 102, _usage(2.5, 70.0, 75.0), None, "l2", exit_code=0)]
    jobs = [_job("cj-00000", 0.5), _job("cj-00001", 1.5), _job("cj-00002", 0.25),
            _job("cj-00003", 3.0, owner=False)]  # no owner reference: the name says whose
    fields = sharded_fields(runs, at_window, after, jobs, TICK, 65.0, "shard-1")
    rows = cast(list[dict[str, object]], fields["replicas"])
    assert [r["shard"] for r in rows] == IDS
    assert rows[0] == {"shard": "shard-0", "pid": 100, "leader": False, "cpu_seconds": 4.0,
                       "cpu_cores_avg": 0.062, "peak_rss_mib": 80.0, "hwm_rss_mib": 95.0,
                       "rss_samples": 650, "owned": 2, "jobs": 2, "p99": 1.5,
                       "cache_sync_seconds": 1.5, "log": "l0"}
    assert rows[1]["leader"] is True and rows[1]["owned"] == 1 and rows[1]["p99"] == 0.25
    assert rows[2]["p99"] == 3.0 and rows[2]["exit_code"] == 0
    assert "exit_code" not in rows[0]
    assert fields["cpu_seconds_max"] == 6.5 and fields["cpu_seconds_sum"] == 13.0
    assert fields["peak_rss_mib_max"] == 90.0 and fields["hwm_rss_mib_max"] == 99.0
    assert (fields["owned_min"], fields["owned_max"]) == (1, 2)
    assert fields["leader"] == "shard-1"
    assert fields["moved_in_window"] == 1


def test_sharded_cpu_is_unknown_when_one_replica_was_not_read() -> None:
    runs = [ReplicaRun("shard-0", 1, _usage(4.0, 80.0, 95.0)),
            ReplicaRun("shard-1", 2, _usage(None, 90.0, 99.0))]
    fields = sharded_fields(runs, Census(), Census(), [], TICK, 65.0, None)
    assert fields["cpu_seconds_max"] is None and fields["cpu_seconds_sum"] is None
    assert fields["peak_rss_mib_max"] == 90.0
    rows = cast(list[dict[str, object]], fields["replicas"])
    assert rows[1]["cpu_cores_avg"] is None and rows[1]["p99"] is None
    assert rows[0]["owned"] == 0 and fields["moved_in_window"] == 0


def test_duplicates_are_runs_of_t_beyond_one_per_cronjob() -> None:
    jobs = [_job("cj-00000", 0.5), _job("cj-00001", 0.6),
            _job("cj-00000", 0.7, name="cj-00000-other"),  # a second run of T: a duplicate
            _job("cj-00001", 0.1, minute=MINUTE - 1),  # the history Job: another minute
            _job("cj-00002", 0.2, owner=False)]  # no owner: counted by its own name
    assert duplicates(jobs, TICK, ANNOTATION) == 1
    assert duplicates(jobs[:2], TICK, ANNOTATION) == 0
    bad = JobSeen(name="x", seen_at=TICK, created=TICK, annotations={ANNOTATION: "nonsense"})
    assert duplicates([bad], TICK, ANNOTATION) == 0


# -- ratios and the goal ---------------------------------------------------------------------
SINGLE = {"p99": 2.0, "cpu_seconds": 20.0, "peak_rss_mib": 100.0}
SHARDED_PHASE = {"p99": 1.0, "cpu_seconds_max": 7.0, "cpu_seconds_sum": 21.0,
                 "peak_rss_mib_max": 80.0}


def test_shard_ratios_against_the_single_replica() -> None:
    r = shard_ratios(SINGLE, SHARDED_PHASE)
    assert r == {"shard_cpu_max_vs_single": 0.35, "shard_cpu_sum_vs_single": 1.05,
                 "shard_rss_max_vs_single": 0.8, "shard_p99_vs_single": 0.5}
    assert set(shard_ratios({}, SHARDED_PHASE).values()) == {None}
    assert shard_ratios(SINGLE, {"error": "boom"})["shard_cpu_max_vs_single"] is None


def test_verdict_without_shards_is_todays_keys_only() -> None:
    ratio, judged = verdict({"pyctrl": SINGLE}, sharded=False)
    assert not any(key.startswith("shard_") for key in ratio)
    assert set(judged) == set(GOALS)


def test_verdict_with_shards_judges_the_busiest_replica_at_0_4x() -> None:
    assert SHARD_GOALS["shard_cpu"].ratio == "shard_cpu_max_vs_single"
    assert SHARD_GOALS["shard_cpu"].at_most == 0.4
    ratio, judged = verdict({"pyctrl": SINGLE, SHARDED: SHARDED_PHASE}, sharded=True)
    assert ratio["shard_cpu_max_vs_single"] == 0.35 and ratio["p99"] is None
    assert set(judged) == set(GOALS) | {"shard_cpu"}
    assert judged["shard_cpu"] == {"ratio": "shard_cpu_max_vs_single", "at_most": 0.4,
                                   "value": 0.35, "met": True}
    busy = SHARDED_PHASE | {"cpu_seconds_max": 9.0}
    assert verdict({"pyctrl": SINGLE, SHARDED: busy}, True)[1]["shard_cpu"]["met"] is False
    missing = verdict({SHARDED: SHARDED_PHASE}, True)[1]["shard_cpu"]
    assert missing["value"] is None and missing["met"] is None


def test_the_table_output_flattens_the_replica_rows() -> None:
    rows = _table({"pyctrl-sharded": {"replicas": [{"shard": "shard-0", "cpu_seconds": 1.5},
                                                   {"shard": "shard-1"}], "tick": [1, 2]}})
    assert rows == [("pyctrl-sharded.replicas[0].shard", "shard-0"),
                    ("pyctrl-sharded.replicas[0].cpu_seconds", "1.500"),
                    ("pyctrl-sharded.replicas[1].shard", "shard-1"),
                    ("pyctrl-sharded.tick", "[1, 2]")]


def test_census_weighs_the_leaders_shard_like_its_sharder() -> None:
    weighted = HashRing(IDS, weights={"shard-0": 0.5})
    items = [_cronjob(i, weighted.shard_for(f"{NS}/cj-{i:05d}")) for i in range(300)]
    assert census(items, IDS, leader="shard-0", leader_weight=0.5).settled
    plain = census(items, IDS)
    assert plain.off_ring > 0, "an equal-weight ring would still move some"
    assert plain.owned["shard-0"] < min(plain.owned["shard-1"], plain.owned["shard-2"])
