"""The ``pyctrl-sharded`` phase of ``bench.cronjob_skew`` (``--shards S``): replicas and labels.

Contract:

* :func:`select_phases` is the phase list of a run: ``--only`` alone if given (``--only
  pyctrl-sharded`` needs ``--shards S >= 1``); without ``--shards`` pyctrl, upstream, limit as
  always; with it ``pyctrl`` (one unsharded replica) then ``pyctrl-sharded`` (``S``
  replicas), plus upstream and limit only with ``--all-phases``. It raises ``SystemExit`` for
  a negative ``--shards`` or that ``--only`` without shards.
* :func:`replicas` builds the ``S`` :class:`Controller` s of the phase: each is ``python -m
  cronjob_controller`` with the single replica's flags (``--workers``, ``--qps/--burst``)
  plus ``--sharding --shard-id shard-<i>``, the leader Lease :data:`LEADER_LEASE` and the
  shard Leases in the phase's namespace, ``POD_NAME=shard-<i>`` (so the leader Lease's
  holder identity starts with the shard id: :func:`leader_shard`), and its own log
  ``cronjob_controller-shard-<i>.log``. :func:`stop_all` stops them all at once (SIGTERM to
  each, then wait), so no replica's exit makes the leader relabel towards the others.
* :func:`census` reads the shard labels of the phase's CronJobs: the owner of each, how many
  each shard owns, and how many are unlabelled, labelled for a shard that is not one of ours
  (``foreign``), draining, or ``off_ring`` (labelled for a shard other than the one the
  controller's own :class:`pyctrl.sharding.HashRing` of all ``S`` shards, the leader's
  weighted by ``--shard-leader-weight``, picks: a move the
  sharder has not made yet), and ``handing_over`` (still carrying the handover annotation:
  its shard has not adopted its Jobs yet, e.g. the history Jobs the bench made unlabelled,
  so it would not be synced at the tick). ``settled`` is all five zero.
  :func:`wait_labelled` lists the CronJobs every ``interval`` s until the census is settled
  and covers all ``--cronjobs``, or ``--settle-timeout`` after the replicas started
  (measured anyway, ``settled: false``).
* :func:`sharded_fields` turns the per-replica readings (CPU and RSS of the window, the
  census before the window, the one after it) and the tick's Jobs into the phase's figures:
  ``replicas`` (``shard``, ``pid``, ``leader``, ``cpu_seconds``, ``cpu_cores_avg``,
  ``peak_rss_mib``, ``hwm_rss_mib``, ``rss_samples``, ``owned``, ``jobs`` and ``p99`` of the
  Jobs of its CronJobs, ``cache_sync_seconds``, ``log``, ``exit_code`` when it exited),
  ``cpu_seconds_max``/``cpu_seconds_sum`` (None unless every replica was read),
  ``peak_rss_mib_max``, ``hwm_rss_mib_max``, ``owned_min``/``owned_max``, ``leader`` and
  ``moved_in_window`` (CronJobs whose owner differs between the two censuses).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bench.cronjob_skew.controllers import Controller
from bench.cronjob_skew.objects import PYCTRL_CRONJOBS
from bench.cronjob_skew.probe import JobSeen, summary
from pyctrl.errors import ApiError
from pyctrl.kube import LEASES, RawObject, RESTClient
from pyctrl.sharding import HashRing, ShardingOptions
from pyctrl.testing.envtest import ControlPlane

__all__ = [
    "LEADER_LEASE",
    "SHARDED",
    "Census",
    "ReplicaRun",
    "census",
    "leader_shard",
    "replica_args",
    "replicas",
    "select_phases",
    "shard_ids",
    "sharded_fields",
    "stop_all",
    "take_census",
    "wait_labelled",
]

SHARDED = "pyctrl-sharded"
LEADER_LEASE = "pyctrl-cronjob-controller"
_OPTIONS = ShardingOptions(controller="cronjob", shard_id="bench", resource=PYCTRL_CRONJOBS)
SHARD_LABEL = _OPTIONS.shard_label  # shard.sharding.pyctrl.io/cronjob
DRAIN_LABEL = _OPTIONS.drain_label
HANDOVER_ANNOTATION = _OPTIONS.handover_annotation


def select_phases(only: str | None, shards: int, all_phases: bool) -> list[str]:
    """The phases of a run, in order (see the module docstring)."""
    if shards < 0:
        raise SystemExit("--shards must be >= 0")
    if only == SHARDED and shards < 1:
        raise SystemExit(f"--only {SHARDED} needs --shards S (S >= 1)")
    if only:
        return [only]
    if shards == 0:
        return ["pyctrl", "upstream", "limit"]
    return ["pyctrl", SHARDED, *(("upstream", "limit") if all_phases else ())]


def shard_ids(n: int) -> list[str]:
    return [f"shard-{i}" for i in range(n)]


def replica_args(shard: str, namespace: str, leader_weight: float = 1.0) -> list[str]:
    """The flags one replica adds to the single replica's."""
    return ["--sharding", "--shard-id", shard, "--leader-elect-namespace", namespace,
            "--leader-elect-name", LEADER_LEASE, f"--shard-leader-weight={leader_weight}"]


def replicas(cp: ControlPlane, args: argparse.Namespace, log_dir: Path,
             namespace: str) -> list[Controller]:
    return [Controller(SHARDED, cp, args, log_dir, extra_args=replica_args(
                           shard, namespace, getattr(args, "shard_leader_weight", 1.0)),
                       extra_env={"POD_NAME": shard},
                       log_name=f"cronjob_controller-{shard}.log")
            for shard in shard_ids(args.shards)]


def stop_all(controllers: Sequence[Controller]) -> list[Path]:
    """Stop every controller at once; their kept logs, in order."""
    if len(controllers) < 2:
        return [c.stop() for c in controllers]
    with ThreadPoolExecutor(len(controllers), thread_name_prefix="stop") as pool:
        return list(pool.map(lambda c: c.stop(), controllers))


# -- the labels ---------------------------------------------------------------------------------
@dataclass
class Census:
    """The shard labels of a phase's CronJobs (see the module docstring)."""

    owner: dict[str, str] = field(default_factory=dict)  # CronJob name -> its shard label
    owned: dict[str, int] = field(default_factory=dict)  # our shard -> CronJobs it owns
    total: int = 0
    unlabelled: int = 0
    foreign: int = 0
    draining: int = 0
    off_ring: int = 0
    handing_over: int = 0

    @property
    def settled(self) -> bool:
        return not (self.unlabelled or self.foreign or self.draining or self.off_ring
                    or self.handing_over)

    def counts(self) -> dict[str, object]:
        return {"total": self.total, "owned": dict(self.owned), "unlabelled": self.unlabelled,
                "foreign": self.foreign, "draining": self.draining, "off_ring": self.off_ring,
                "handing_over": self.handing_over}


def census(items: Iterable[RawObject], ids: Sequence[str], leader: str | None = None,
           leader_weight: float = 1.0) -> Census:
    """Read the shard labels of ``items`` against the shards ``ids`` (module docstring);
    ``leader``'s shard weighs ``leader_weight`` in the ring, as in the leader's sharder."""
    ring = HashRing(ids, _OPTIONS.virtual_nodes,
                    {leader: leader_weight} if leader is not None else None)
    out = Census(owned=dict.fromkeys(ids, 0))
    for obj in items:
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        name, ns = str(meta.get("name")), str(meta.get("namespace") or "")
        shard = str(labels.get(SHARD_LABEL) or "")
        out.total += 1
        if labels.get(DRAIN_LABEL):
            out.draining += 1
        if HANDOVER_ANNOTATION in (meta.get("annotations") or {}):
            out.handing_over += 1
        if not shard:
            out.unlabelled += 1
            continue
        out.owner[name] = shard
        if shard not in out.owned:
            out.foreign += 1
            continue
        out.owned[shard] += 1
        if ring.shard_for(f"{ns}/{name}" if ns else name) != shard:
            out.off_ring += 1
    return out


def take_census(client: RESTClient, namespace: str, ids: Sequence[str],
                leader_weight: float = 1.0) -> Census:
    """The census of the phase's CronJobs now; a LIST that fails (a 6000-object LIST timed
    out once while the replicas started) is tried twice more before the error is raised."""
    leader = leader_shard(client, namespace)
    for attempt in range(3):
        try:
            items = client.list(PYCTRL_CRONJOBS, namespace).get("items") or []
            break
        except ApiError:
            if attempt == 2:
                raise
            time.sleep(2.0)
    return census(items, ids, leader, leader_weight)


def wait_labelled(client: RESTClient, namespace: str, ids: Sequence[str], started: float,
                  args: argparse.Namespace, check: Callable[[], None],
                  interval: float = 3.0) -> dict[str, object]:
    """Wait until every CronJob is where the ring of ``ids`` puts it (module docstring)."""
    polls = 0
    while True:
        check()
        labels = take_census(client, namespace, ids,
                             getattr(args, "shard_leader_weight", 1.0))
        polls += 1
        elapsed = time.monotonic() - started
        done = labels.settled and labels.total >= args.cronjobs
        if done or elapsed >= args.settle_timeout:
            return {"settled": done, "seconds": round(elapsed, 1), "polls": polls,
                    **labels.counts()}
        time.sleep(interval)


def leader_shard(client: RESTClient, namespace: str) -> str | None:
    """The shard id of the leader Lease's holder (``<POD_NAME>_<random>``), if any."""
    try:
        spec = client.get(LEASES, LEADER_LEASE, namespace).get("spec") or {}
    except ApiError:
        return None
    holder = str(spec.get("holderIdentity") or "")
    return holder.rsplit("_", 1)[0] or None


# -- the figures --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReplicaRun:
    """What was read of one replica: its CPU/RSS window (``ProcessSampler.stop()``) et al."""

    shard: str
    pid: int
    usage: Mapping[str, object]
    cache_sync_seconds: float | None = None
    log: str = ""
    exit_code: int | None = None


def _numbers(values: Iterable[object]) -> list[float] | None:
    """``values`` as floats, or None unless every one is a number (and there is one)."""
    given = list(values)
    out = [float(v) for v in given if isinstance(v, int | float) and not isinstance(v, bool)]
    return out if out and len(out) == len(given) else None


def sharded_fields(runs: Sequence[ReplicaRun], at_window: Census, after_window: Census,
                   jobs: Sequence[JobSeen], tick: float, window_s: float,
                   leader: str | None) -> dict[str, object]:
    """The sharded phase's per-replica and total figures (see the module docstring)."""
    skews: dict[str, list[float]] = {run.shard: [] for run in runs}
    for job in jobs:
        cronjob = job.owner or job.name.rsplit("-", 1)[0]
        shard = at_window.owner.get(cronjob)
        if shard in skews:
            skews[shard].append(job.seen_at - tick)
    rows: list[dict[str, object]] = []
    for run in runs:
        cpu = run.usage.get("cpu_seconds")
        row: dict[str, object] = {
            "shard": run.shard, "pid": run.pid, "leader": run.shard == leader,
            "cpu_seconds": cpu,
            "cpu_cores_avg": (round(cpu / window_s, 3)
                              if isinstance(cpu, int | float) and window_s > 0 else None),
            "peak_rss_mib": run.usage.get("peak_rss_mib"),
            "hwm_rss_mib": run.usage.get("hwm_rss_mib"),
            "rss_samples": run.usage.get("rss_samples"),
            "owned": at_window.owned.get(run.shard, 0),
            "jobs": len(skews[run.shard]), "p99": summary(skews[run.shard])["p99"],
            "cache_sync_seconds": run.cache_sync_seconds,
            "log": run.log,
        }
        if run.exit_code is not None:
            row["exit_code"] = run.exit_code
        rows.append(row)
    cpus = _numbers(r["cpu_seconds"] for r in rows)
    peaks = _numbers(r["peak_rss_mib"] for r in rows)
    hwms = _numbers(r["hwm_rss_mib"] for r in rows)
    owned = [int(at_window.owned.get(run.shard, 0)) for run in runs]
    moved = sum(1 for name, shard in at_window.owner.items()
                if after_window.owner.get(name) != shard)
    return {
        "replicas": rows,
        "cpu_seconds_max": None if cpus is None else max(cpus),
        "cpu_seconds_sum": None if cpus is None else round(sum(cpus), 3),
        "peak_rss_mib_max": None if peaks is None else max(peaks),
        "hwm_rss_mib_max": None if hwms is None else max(hwms),
        "owned_min": min(owned, default=0), "owned_max": max(owned, default=0),
        "leader": leader,
        "moved_in_window": moved,
    }
