"""CronJob scheduling skew at scale: pyctrl's cronjob_controller against upstream's, one tick.

One run starts one throwaway control plane (envtest: etcd + kube-apiserver, no
kube-controller-manager at first) and runs three phases in turn, each in its own namespace
(``--shards S`` changes the list: see "Sharded" below):

1. ``pyctrl``: ``N`` ``batch.pyctrl.io/v1`` CronJobs, and ``python -m cronjob_controller`` as a
   subprocess (``--workers``, ``--qps/--burst 2000``, metrics off, probes on loopback;
   ``--pyctrl-default-limits`` leaves out ``--qps/--burst`` so the controller's own defaults
   apply). Each phase reports ``apiserver_429``: the 429s kube-apiserver answered from T-5 s
   until the tick's Jobs were seen (its ``apiserver_request_total{code="429"}``).
2. ``upstream``: ``N`` ``batch/v1`` CronJobs of the same shape, and kube-controller-manager with
   only the ``cronjob`` controller (``--concurrent-cron-job-syncs=50``,
   ``--kube-api-qps/--kube-api-burst 2000``). The pyctrl controller is stopped (SIGTERM, wait)
   and its objects deleted before KCM starts, so the two never run at once.
3. ``limit``: no controller; the Go anchor ``bench/anchors/jobcreate`` creates the same ``N``
   Jobs (pyctrl's Job for each CronJob, same size) from ``--limit-workers`` goroutines as fast
   as the API server accepts them, starting at its own tick ``T`` (see
   :mod:`bench.cronjob_skew.limit`): the floor any controller's p99 on this API server has.

Sharded (issue 16), ``--shards S`` with ``S >= 1``: the pyctrl phase becomes two, one after
the other, never overlapping: ``pyctrl`` (one unsharded replica, exactly as above) and then
``pyctrl-sharded`` (namespace ``skew-pyctrl-sharded``, the same ``N`` CronJobs and history
Jobs): ``S`` replicas of ``python -m cronjob_controller``, each with the single one's flags
plus ``--sharding --shard-id shard-<i>``, their Leases in the phase's namespace (see
:mod:`bench.cronjob_skew.shards`). Upstream and limit are skipped then (they do not change
with ``--shards``, and they take minutes) unless ``--all-phases`` is given (they run after
the two pyctrl phases); ``--only pyctrl-sharded`` runs the sharded phase alone (no single
replica to compare with, so its ratios are None).

Each controller phase: the CronJobs (schedule ``* * * * *``, Job template ``suspend: true`` so
no pod would ever run; see ``--schedule`` below) are created by parallel threads a little after
a minute boundary, and with each (``--jobs-at-start``, default ``N``) one finished Job it owns,
run at the start of the current minute (created, then marked Complete through the status
subresource), so the caches hold ``N`` CronJobs and ``N`` Jobs at start as in a cluster that
has run for a while; then the controller starts. ``cache_sync_seconds`` is the controller
process's start to its caches synced (pyctrl: its ``/readyz`` turned 200; upstream: the cronjob
controller's "Caches are synced" log line; see :mod:`bench.cronjob_skew.sync`). Warm-up lasts
at least ``--warmup`` seconds and until the controller has settled (its CPU use over a 3 s
window below ``--settle-cores``), so the measured tick is a steady-state one, not start-up. The
measured tick ``T`` is the first minute boundary at least 5 s after that. A Job belongs to
``T`` when its name ends in ``-<T in unix minutes>`` (both controllers name Jobs so; the
scheduled-timestamp annotations are checked too).

``--schedule tick`` (the default from 5000 CronJobs on, ``auto``): the CronJobs fire only at
``T``, chosen before they are created as the first minute boundary ``--tick-lead`` seconds
(default N/150 + warm-up + 60, + N/200 when sharded) after the creation starts. With the
every-minute schedule and Jobs that never finish, each minute of a long setup adds N active
Jobs (a 10k run once held ~100k at its tick); one tick keeps the caches at N CronJobs and
``--jobs-at-start`` Jobs. The warm-up then ends at ``T`` - 5 s, settled or not (``settled``
says which); a setup that leaves less than that fails the phase. ``schedule`` in the result
records the mode.

Per phase: skew = Job creation - T, in two ways: ``skew_watch`` (when this process decoded
the Job's ADDED event on its own WATCH: fine resolution, includes a few ms of watch latency)
and ``skew_created`` (``metadata.creationTimestamp`` - T: the API server truncates it to whole
seconds, so it is a floor). The top-level ``p50``/``p99``/``max`` of a phase are the watch
figures. ``count``/``missing`` are against ``N``. The controller's CPU seconds are the
``/proc/<pid>/stat`` utime+stime delta over the window T-5 s .. T+60 s, and ``peak_rss_mib`` the
highest VmRSS polled every 100 ms in that window (``hwm_rss_mib``: VmHWM, since start).
``gc_pauses`` (pyctrl): the collector's pauses in the same window, per generation (count,
total ms, ``max_le`` the bucket bound holding the longest, the bucket counts), read from the
controller's ``python_gc_duration_seconds`` at both ends of the window.
``prior_jobs`` counts Jobs that existed before the window apart from the ``history_jobs``
made at setup (a warm-up tick happened). ``duplicates`` counts Jobs scheduled at ``T`` (by
their annotation, whatever their name) beyond one per CronJob: two replicas acting on one
CronJob would show here. ``burst`` (every phase, the limit's too) is where the CPU went while
the Jobs were being created: from ``T`` to the last Job seen, the CPU seconds and cores of
the kube-apiserver, etcd and the controller (``controller-<i>`` per sharded replica; the Go
client in the limit phase), read every 50 ms, and the API server's CPU milliseconds per Job.
On a small machine the controller and the API server share the cores: a controller that
uses more CPU per Job leaves the API server less (see :class:`bench.cronjob_skew.probe.CpuTrace`).

The sharded phase measures the same way per replica, after two waits: first until every
CronJob carries the shard label the replicas' hash ring of all ``S`` shards gives it (none
unlabelled, draining or on a shard not running; the CronJobs are listed every 3 s; the
``labels`` key records how long that took), then until every replica is settled (each one
under ``--settle-cores``); both end at ``--settle-timeout`` after start at the latest. The
labels are read again just before ``T`` (``owned`` per replica) and after the window
(``moved_in_window``). It reports ``replicas``: per replica ``shard``, ``pid``, ``leader``
(holds the leader Lease, so runs the sharder too), ``cpu_seconds``, ``peak_rss_mib``,
``hwm_rss_mib`` over the same window T-5 s .. T+60 s, ``owned`` CronJobs, ``jobs`` and
``p99`` of those CronJobs' Jobs of ``T``, ``cache_sync_seconds``; and
``cpu_seconds_max``/``cpu_seconds_sum``/``peak_rss_mib_max``, with ``p50``/``p99``/``max``,
``count``, ``missing``, ``duplicates`` over all Jobs as for the other phases.

``ratio`` holds pyctrl / upstream (``p99``, ``cpu``, ``rss``, ...) and pyctrl / limit
(``p99_vs_limit``), lower is better for every figure; ``goals`` judges issue 15's goals on
them (:mod:`bench.cronjob_skew.report`). With ``--shards`` also sharded / single:
``shard_cpu_max_vs_single`` (the busiest replica's CPU seconds / the single replica's),
``shard_cpu_sum_vs_single``, ``shard_rss_max_vs_single``, ``shard_p99_vs_single``, and the
goal ``shard_cpu`` (issue 16: ``shard_cpu_max_vs_single <= 0.4``). ``--profile`` samples the
single pyctrl replica with py-spy over its CPU window (``--profile-burst S``: from ``T`` for
``S`` seconds, the creates only) and writes a top-40 table
(:mod:`bench.cronjob_skew.profile`). The JSON result, a PNG of the skew CDFs and the profile
go to ``bench/results/cronjob-skew-<UTC timestamp>*`` (git-ignored, with ``command``: the
command line), and the run's row of the ``bench/README.md`` table to stderr and to
``...<timestamp>.md`` (:mod:`bench.cronjob_skew.summary`); the controllers' logs to a temp
dir (``logs``). The objects and their cleanup are :mod:`bench.cronjob_skew.objects`.
Wall-clock waits are real on purpose: this measures real time. One run of 2000 takes about
6-8 minutes; a phase takes 2-4 minutes plus setup (creating the objects, labelling).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.cronjob_skew.controllers import (
    REPO,
    Controller,
    PhaseError,
    add_controller_arguments,
    gc_delta,
    wait_settled,
)
from bench.cronjob_skew.limit import LIMIT_NAMESPACE, run_limit_phase
from bench.cronjob_skew.objects import (
    ANNOTATIONS,
    BATCH_CRONJOBS,
    PYCTRL_CRONJOBS,
    bench_client,
    create_cronjobs,
    cronjob,
    delete_all,
    finished_status,
    history_job,
    job_template,
)
from bench.cronjob_skew.probe import (
    CpuTrace,
    JobWatch,
    ProcessSampler,
    apiserver_throttled,
    burst_fields,
    plane_pids,
)
from bench.cronjob_skew.profile import finish_profiler, start_profiler
from bench.cronjob_skew.report import duplicates, skew_fields, verdict
from bench.cronjob_skew.shards import (
    SHARDED,
    Census,
    ReplicaRun,
    leader_shard,
    replicas,
    select_phases,
    shard_ids,
    sharded_fields,
    stop_all,
    take_census,
    wait_labelled,
)
from bench.cronjob_skew.summary import HEADER, row
from cronjob_controller.__main__ import DEFAULT_SHARD_LEADER_WEIGHT
from pyctrl.errors import AlreadyExists, ApiError
from pyctrl.kube import NAMESPACES, RESTClient
from pyctrl.testing.envtest import ControlPlane

__all__ = [  # the objects' builders stay importable from here (bench.soak, tests)
    "ANNOTATIONS", "BATCH_CRONJOBS", "PYCTRL_CRONJOBS", "add_arguments", "create_cronjobs",
    "cronjob", "delete_all", "finished_status", "history_job", "iso", "job_template",
    "machine", "run", "run_phase",
]

RESULTS = Path(__file__).resolve().parent.parent / "results"
PHASES = ("pyctrl", "upstream", "limit")
CONTROLLERS = {
    "pyctrl": "python -m cronjob_controller",
    SHARDED: "python -m cronjob_controller --sharding",
    "upstream": "kube-controller-manager --controllers=cronjob",
}
WINDOW_BEFORE = 5.0  # CPU/RSS window: T-5 s ..
WINDOW_AFTER = 60.0  # .. T+60 s
CREATE_LATEST_SECOND = 25.0  # start creating only in the first 25 s of a minute


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cronjobs", type=int, default=2000, help="CronJobs per controller")
    parser.add_argument("--only", choices=(*PHASES, SHARDED), default=None,
                        help="run one phase only")
    parser.add_argument("--shards", type=int, default=0,
                        help="S >= 1: after the single pyctrl replica, run S sharded replicas "
                             "(phase pyctrl-sharded) on as many CronJobs; upstream and limit "
                             "are then skipped unless --all-phases")
    parser.add_argument("--shard-leader-weight", type=float,
                        default=DEFAULT_SHARD_LEADER_WEIGHT, metavar="W",
                        help="with --shards: the replicas' --shard-leader-weight (default: "
                             "the controller's, %(default)s)")
    parser.add_argument("--all-phases", action="store_true",
                        help="with --shards: also run the upstream and limit phases")
    add_controller_arguments(parser, settle_timeout=240.0)
    parser.add_argument("--jobs-at-start", type=int, default=None,
                        help="finished Jobs present at controller start, one per CronJob "
                             "(default: --cronjobs; 0 for none)")
    parser.add_argument("--limit-workers", type=int, default=50,
                        help="goroutines of the limit phase's Go client")
    parser.add_argument("--profile", action="store_true",
                        help="sample pyctrl with py-spy during the tick window; write a "
                             "top-40 table next to the JSON (samples: the thread holding the "
                             "GIL, i.e. Python CPU)")
    parser.add_argument("--profile-wall", action="store_true",
                        help="--profile every thread py-spy does not judge idle, not only the "
                             "GIL holder: where the workers wait")
    parser.add_argument("--profile-burst", type=float, default=None, metavar="SECONDS",
                        help="--profile only from T for SECONDS (the creates at the tick), "
                             "not the whole window T-5 s .. T+60 s")
    parser.add_argument("--warmup", type=float, default=15.0,
                        help="minimum seconds between controller start and the window")
    parser.add_argument("--schedule", choices=("auto", "minute", "tick"), default="auto",
                        help="CronJobs fire every minute, or only at the measured tick "
                             "(auto: tick from 5000 CronJobs on)")
    parser.add_argument("--tick-lead", type=float, default=None,
                        help="--schedule tick: seconds from the creation's start to the "
                             "earliest T (default N/150 + warmup + 60, + N/200 sharded)")
    parser.add_argument("--collect-timeout", type=float, default=150.0,
                        help="seconds after T to wait for all N Jobs of T")
    parser.add_argument("--results-dir", type=Path, default=RESULTS,
                        help="where the JSON and PNG go")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG")


# -- time ---------------------------------------------------------------------------------------
def sleep_until(wall: float, check: Callable[[], None] | None = None) -> None:
    """Sleep until ``time.time() >= wall``, calling ``check`` (may raise) about every second."""
    while True:
        left = wall - time.time()
        if left <= 0:
            return
        if check is not None:
            check()
        time.sleep(min(left, 1.0))


def wait_for_creation_slot() -> None:
    """Return a little after a minute boundary (now, if we are early in a minute)."""
    sec = time.time() % 60
    if 1.0 <= sec <= CREATE_LATEST_SECOND:
        return
    sleep_until(math.floor(time.time() / 60) * 60 + (60.0 if sec > 1.0 else 0.0) + 1.0)


def one_tick(args: argparse.Namespace) -> bool:
    """Whether the CronJobs fire only at the measured tick (``--schedule``)."""
    return bool(args.schedule == "tick" or (args.schedule == "auto" and args.cronjobs >= 5000))


def planned_tick(args: argparse.Namespace, sharded: bool, now: float) -> float:
    """``T`` for ``--schedule tick``: the first minute boundary ``--tick-lead`` s after now."""
    lead = args.tick_lead
    if lead is None:
        lead = args.cronjobs / 150 + args.warmup + 60.0 + (args.cronjobs / 200 if sharded else 0)
    return math.ceil((now + float(lead)) / 60) * 60.0


def profile_window(args: argparse.Namespace, tick: float) -> tuple[float, float]:
    """(start, seconds) of the py-spy window: T-5 s .. T+60 s, or T .. T+``--profile-burst``."""
    if args.profile_burst is not None:
        return tick, max(1.0, float(args.profile_burst))
    return tick - WINDOW_BEFORE, WINDOW_BEFORE + WINDOW_AFTER


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# -- one phase ----------------------------------------------------------------------------------
def run_phase(phase: str, cp: ControlPlane, client: RESTClient, args: argparse.Namespace,
              log_dir: Path, series: dict[str, dict[str, list[float]]],
              profile_prefix: Path | None = None) -> dict[str, object]:
    """One controller phase (see the module docstring); profiled when ``profile_prefix``."""
    n = args.cronjobs
    history = n if args.jobs_at_start is None else min(n, max(0, args.jobs_at_start))
    namespace = f"skew-{phase}"
    with contextlib.suppress(AlreadyExists):
        client.create(NAMESPACES, {"metadata": {"name": namespace}})
    sharded = phase == SHARDED
    ids = shard_ids(args.shards) if sharded else []
    controllers = (replicas(cp, args, log_dir, namespace) if sharded
                   else [Controller(phase, cp, args, log_dir)])
    if phase != "upstream" and importlib.util.find_spec("cronjob_controller.__main__") is None:
        raise PhaseError("cronjob_controller/__main__.py does not exist yet: "
                         "`python -m cronjob_controller` cannot run")

    def check() -> None:
        for controller in controllers:
            controller.check()

    watch = JobWatch(client, namespace)
    watch.start()
    samplers: list[ProcessSampler] = []
    trace: CpuTrace | None = None
    profiler = None
    labels: dict[str, object] = {}
    at_window = after_window = Census()
    throttled_before = throttled_after = None
    leader: str | None = None
    try:
        wait_for_creation_slot()
        created_at = time.time()
        planned = planned_tick(args, sharded, created_at) if one_tick(args) else None
        create_s = create_cronjobs(client, phase, namespace, n, args.create_threads, history,
                                   planned)
        pids = [controller.start() for controller in controllers]
        started = time.monotonic()
        started_wall = time.time()
        if sharded:  # every CronJob labelled where the ring of all S shards puts it
            labels = wait_labelled(client, namespace, ids, started, args, check)
        timeout = None  # one tick: warm up until T - 6 s at the latest (from ``started``)
        if planned is not None:
            left = planned - WINDOW_BEFORE - 1.0 - time.time()
            if left < 0:
                raise PhaseError(f"setup ended {-left:.0f} s too late for the one-tick "
                                 f"schedule at {iso(planned)}: raise --tick-lead")
            timeout = time.monotonic() - started + left
        settled, settle_s = wait_settled(pids, started, args, check, timeout)
        syncs = [controller.cache_sync_seconds() for controller in controllers]
        if sharded:
            at_window = take_census(client, namespace, ids, args.shard_leader_weight)
            leader = leader_shard(client, namespace)
        tick = (planned if planned is not None
                else math.ceil((time.time() + WINDOW_BEFORE + 1.0) / 60) * 60.0)
        suffix = f"-{int(tick) // 60}"
        sleep_until(tick - WINDOW_BEFORE, check)
        prior_jobs = len(watch.snapshot()) - history
        throttled_before = apiserver_throttled(cp)
        samplers = [ProcessSampler(pid) for pid in pids]
        for sampler in samplers:
            sampler.start()
        gc_before = [controller.gc_pauses() for controller in controllers]
        trace = CpuTrace(plane_pids(cp) | {f"controller-{i}" if sharded else "controller": pid
                                          for i, pid in enumerate(pids)})
        trace.start()
        profile_from, profile_for = profile_window(args, tick)
        if profile_prefix is not None:
            sleep_until(profile_from, check)  # now for the whole window, T for the burst
            profiler = start_profiler(pids[0], profile_for,
                                      profile_prefix.with_suffix(".collapsed"),
                                      gil=not args.profile_wall)
        sleep_until(tick + WINDOW_AFTER, check)
        usages = [sampler.stop() for sampler in samplers]
        gc_window = [gc_delta(before, controller.gc_pauses())
                     for before, controller in zip(gc_before, controllers, strict=True)]
        if sharded:
            after_window = take_census(client, namespace, ids, args.shard_leader_weight)
        deadline = tick + args.collect_timeout
        while watch.count_suffix(suffix) < n and time.time() < deadline:
            check()
            time.sleep(0.5)
        seen = watch.snapshot()
        jobs = [j for j in seen if j.name.endswith(suffix)]
        throttled_after = apiserver_throttled(cp)
    finally:
        for sampler in samplers:
            sampler.stop()  # idempotent; ends the polling thread if the window was cut short
        if trace is not None:
            trace.stop()
        logs = stop_all(controllers)
        watch.close()
    profile = (None if profiler is None or profile_prefix is None else finish_profiler(
        profiler, profile_prefix.with_suffix(".collapsed"), profile_prefix.with_suffix(".txt"),
        f"py-spy: python -m cronjob_controller, {n} CronJobs, window {iso(profile_from)}"
        f" .. {iso(profile_from + profile_for)}", gil=not args.profile_wall))
    delete_all(cp, namespace)
    series[phase] = {"watch": [j.seen_at - tick for j in jobs],
                     "created": [j.created - tick for j in jobs]}
    window_s = WINDOW_BEFORE + WINDOW_AFTER
    result: dict[str, object] = {
        "controller": CONTROLLERS[phase],
        "workers": args.upstream_syncs if phase == "upstream" else args.pyctrl_workers,
        "namespace": namespace,
        "tick": iso(tick),
        "schedule": "tick" if planned is not None else "minute",
        **skew_fields(jobs, tick, n, ANNOTATIONS[phase]),
        "duplicates": duplicates(seen, tick, ANNOTATIONS[phase]),
        "burst": (None if trace is None
                  else burst_fields(trace, tick, [j.seen_at for j in jobs])),
    }
    if sharded:
        runs = [ReplicaRun(shard, pid, usage, sync, str(log), controller.exit_code)
                for shard, pid, usage, sync, log, controller
                in zip(ids, pids, usages, syncs, logs, controllers, strict=True)]
        result |= {"shards": len(ids), "history_jobs": history,
                   **sharded_fields(runs, at_window, after_window, jobs, tick, window_s, leader),
                   "labels": labels}
    else:
        cpu = usages[0]["cpu_seconds"]
        result |= {
            "cache_sync_seconds": syncs[0], "history_jobs": history, "cpu_seconds": cpu,
            "cpu_cores_avg": None if not isinstance(cpu, float) else round(cpu / window_s, 3),
            "peak_rss_mib": usages[0]["peak_rss_mib"], "hwm_rss_mib": usages[0]["hwm_rss_mib"],
            "rss_samples": usages[0]["rss_samples"], "gc_pauses": gc_window[0],
        }
    result |= {
        "window": [iso(tick - WINDOW_BEFORE), iso(tick + WINDOW_AFTER)],
        "create_cronjobs_s": round(create_s, 2),
        "create_started": iso(created_at),
        "controller_started": iso(started_wall),
        "settled": settled, "settle_s": round(settle_s, 1),
        "prior_jobs": prior_jobs,
        "watch_errors": len(watch.errors),
        # 429s kube-apiserver answered (anyone) from T - 5 s until the tick's Jobs were seen
        "apiserver_429": (None if throttled_before is None or throttled_after is None
                          else throttled_after - throttled_before),
    }
    if not sharded:
        result["log"] = str(logs[0])
        if profile is not None:
            result["profile"] = profile
        if controllers[0].exit_code is not None:
            result["exit_code"] = controllers[0].exit_code
    return result


# -- the run ------------------------------------------------------------------------------------
def machine(cp: ControlPlane | None) -> dict[str, object]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info: dict[str, object] = {
        "platform": platform.platform(), "cpus": os.cpu_count(), "cpu_model": model,
        "python": platform.python_version(),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }
    if cp is not None:
        info["control_plane"] = cp.binaries.directory.name
    return info


def run(args: argparse.Namespace) -> dict[str, object]:
    if args.cronjobs < 1:
        raise SystemExit("--cronjobs must be >= 1")
    phases = select_phases(args.only, args.shards, args.all_phases)
    if args.profile:
        args.results_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    log_dir = Path(tempfile.mkdtemp(prefix=f"cronjob-skew-{stamp}-"))
    result: dict[str, object] = {"cronjobs": args.cronjobs,
                                 "command": "python -m bench " + shlex.join(sys.argv[1:])}
    if args.shards:
        result["shards"] = args.shards
    series: dict[str, dict[str, list[float]]] = {}
    with ControlPlane(crd_dirs=[REPO / "crds"], controller_manager=False) as cp:
        result["machine"] = machine(cp)
        client = bench_client(cp, args.create_threads)
        try:
            for phase in phases:
                print(f"cronjob-skew: phase {phase}, {args.cronjobs} CronJobs", file=sys.stderr)
                try:
                    if phase == "limit":
                        result[phase] = run_limit_phase(cp, client, args, log_dir,
                                                        job_template(), series)
                        delete_all(cp, LIMIT_NAMESPACE)
                    else:
                        prefix = (args.results_dir / f"cronjob-skew-{stamp}-profile"
                                  if args.profile and phase == "pyctrl" else None)
                        result[phase] = run_phase(phase, cp, client, args, log_dir, series,
                                                  prefix)
                except (PhaseError, ApiError, OSError, subprocess.SubprocessError) as err:
                    print(f"cronjob-skew: phase {phase} failed: {err}", file=sys.stderr)
                    result[phase] = {"error": str(err)}
                    delete_all(cp, f"skew-{phase}")
        finally:
            client.close()
    result["machine"]["loadavg_1m_end"] = round(os.getloadavg()[0], 2)  # type: ignore[index]
    phase_results = {p: r for p in (*PHASES, SHARDED) if isinstance(r := result.get(p), dict)}
    # issue 15's ratios and goals; with --shards also S replicas against one, both of this run
    result["ratio"], result["goals"] = verdict(phase_results, bool(args.shards))
    result["logs"] = str(log_dir)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    json_path = args.results_dir / f"cronjob-skew-{stamp}.json"
    result["json"] = str(json_path)
    if not args.no_plot and series:
        from bench.cronjob_skew.plot import plot_cdfs

        png = args.results_dir / f"cronjob-skew-{stamp}.png"
        plot_cdfs(series, png, f"CronJob skew at one tick, {args.cronjobs} CronJobs each"
                  + (f" (pyctrl-sharded: {args.shards} replicas)" if args.shards else ""))
        result["png"] = str(png)
    json_path.write_text(json.dumps(result, indent=2) + "\n")
    # The row bench/README.md keeps (the raw files above stay out of git).
    summary = f"{HEADER}\n{row(result, stamp, args.profile)}\n"
    json_path.with_suffix(".md").write_text(summary)
    print(summary, file=sys.stderr)
    return result
