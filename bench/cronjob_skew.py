"""CronJob scheduling skew at scale: pyctrl's cronjob_controller against upstream's, one tick.

One run starts one throwaway control plane (envtest: etcd + kube-apiserver, no
kube-controller-manager at first) and runs three phases in turn, each in its own namespace:

1. ``pyctrl``: ``N`` ``batch.pyctrl.io/v1`` CronJobs, and ``python -m cronjob_controller`` as a
   subprocess (``--workers``, ``--qps/--burst 2000``, metrics off, probes on loopback).
2. ``upstream``: ``N`` ``batch/v1`` CronJobs of the same shape, and kube-controller-manager with
   only the ``cronjob`` controller (``--concurrent-cron-job-syncs=50``,
   ``--kube-api-qps/--kube-api-burst 2000``). The pyctrl controller is stopped (SIGTERM, wait)
   and its objects deleted before KCM starts, so the two never run at once.
3. ``limit``: no controller; the Go anchor ``bench/anchors/jobcreate`` creates the same ``N``
   Jobs (pyctrl's Job for each CronJob, same size) from ``--limit-workers`` goroutines as fast
   as the API server accepts them, starting at its own tick ``T`` (see
   :mod:`bench.cronjob_skew_limit`): the floor any controller's p99 on this API server has.

Each controller phase: the CronJobs (schedule ``* * * * *``, Job template ``suspend: true`` so
no pod would ever run) are created by parallel threads a little after a minute boundary, and
with each (``--jobs-at-start``, default ``N``) one finished Job it owns, run at the start of
the current minute (created, then marked Complete through the status subresource), so the
caches hold ``N`` CronJobs and ``N`` Jobs at start as in a cluster that has run for a while;
then the controller starts. ``cache_sync_seconds`` is the controller process's start to its caches
synced (pyctrl: its ``/readyz`` turned 200; upstream: the cronjob controller's "Caches are
synced" log line; see :mod:`bench.cronjob_skew_sync`). Warm-up lasts at least ``--warmup``
seconds and until the controller has settled (its CPU use over a 3 s window below
``--settle-cores``), so the measured tick is a steady-state one, not start-up. The measured
tick ``T`` is the first minute boundary at least 5 s after that. A Job belongs to ``T`` when
its name ends in ``-<T in unix minutes>`` (both controllers name Jobs so; the
scheduled-timestamp annotations are checked too).

Per phase: skew = Job creation - T, in two ways: ``skew_watch`` (when this process decoded
the Job's ADDED event on its own WATCH: fine resolution, includes a few ms of watch latency)
and ``skew_created`` (``metadata.creationTimestamp`` - T: the API server truncates it to whole
seconds, so it is a floor). The top-level ``p50``/``p99``/``max`` of a phase are the watch
figures. ``count``/``missing`` are against ``N``. The controller's CPU seconds are the
``/proc/<pid>/stat`` utime+stime delta over the window T-5 s .. T+60 s, and ``peak_rss_mib`` the
highest VmRSS polled every 100 ms in that window (``hwm_rss_mib``: VmHWM, since start).
``prior_jobs`` counts Jobs that existed before the window apart from the ``history_jobs``
made at setup (a warm-up tick happened).

``ratio`` holds pyctrl / upstream (``p99``, ``cpu``, ``rss``, ...) and pyctrl / limit
(``p99_vs_limit``), lower is better for every figure; ``goals`` judges issue 15's goals on
them (:mod:`bench.cronjob_skew_report`). ``--profile`` samples pyctrl with py-spy over its CPU
window and writes a top-40 table (:mod:`bench.cronjob_skew_profile`). The JSON result, a PNG
of the skew CDFs and the profile go to ``bench/results/cronjob-skew-<UTC timestamp>*``.
Wall-clock waits are real on purpose: this measures real time. One run of 2000 takes about
6-8 minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from bench.cronjob_skew_controllers import REPO, Controller, PhaseError, wait_settled
from bench.cronjob_skew_limit import LIMIT_NAMESPACE, run_limit_phase
from bench.cronjob_skew_probe import JobWatch, ProcessSampler
from bench.cronjob_skew_profile import finish_profiler, start_profiler
from bench.cronjob_skew_report import goals, ratios, skew_fields
from pyctrl.errors import AlreadyExists, ApiError
from pyctrl.kube import JOBS, NAMESPACES, Object, Resource, RESTClient
from pyctrl.testing.envtest import ControlPlane

RESULTS = Path(__file__).resolve().parent / "results"
PHASES = ("pyctrl", "upstream", "limit")
PYCTRL_CRONJOBS = Resource("batch.pyctrl.io", "v1", "cronjobs", "CronJob")
BATCH_CRONJOBS = Resource("batch", "v1", "cronjobs", "CronJob")
ANNOTATIONS = {
    "pyctrl": "batch.pyctrl.io/scheduled-timestamp",
    "upstream": "batch.kubernetes.io/cronjob-scheduled-timestamp",
}
WINDOW_BEFORE = 5.0  # CPU/RSS window: T-5 s ..
WINDOW_AFTER = 60.0  # .. T+60 s
CREATE_LATEST_SECOND = 25.0  # start creating only in the first 25 s of a minute


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cronjobs", type=int, default=2000, help="CronJobs per controller")
    parser.add_argument("--only", choices=PHASES, default=None, help="run one phase only")
    parser.add_argument("--pyctrl-workers", type=int, default=16,
                        help="cronjob_controller --workers")
    parser.add_argument("--upstream-syncs", type=int, default=50,
                        help="kube-controller-manager --concurrent-cron-job-syncs")
    parser.add_argument("--qps", type=int, default=2000, help="controllers' client QPS/burst")
    parser.add_argument("--create-threads", type=int, default=32,
                        help="threads creating the CronJobs and their history Jobs")
    parser.add_argument("--jobs-at-start", type=int, default=None,
                        help="finished Jobs present at controller start, one per CronJob "
                             "(default: --cronjobs; 0 for none)")
    parser.add_argument("--limit-workers", type=int, default=50,
                        help="goroutines of the limit phase's Go client")
    parser.add_argument("--profile", action="store_true",
                        help="sample pyctrl with py-spy during the tick window; write a "
                             "top-40 table next to the JSON")
    parser.add_argument("--warmup", type=float, default=15.0,
                        help="minimum seconds between controller start and the window")
    parser.add_argument("--settle-cores", type=float, default=0.10,
                        help="settled when the controller uses fewer cores than this (3 s)")
    parser.add_argument("--settle-timeout", type=float, default=240.0,
                        help="measure anyway after this many seconds unsettled")
    parser.add_argument("--collect-timeout", type=float, default=150.0,
                        help="seconds after T to wait for all N Jobs of T")
    parser.add_argument("--results-dir", type=Path, default=RESULTS,
                        help="where the JSON and PNG go")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG")


# -- objects ------------------------------------------------------------------------------------
def job_template() -> dict[str, object]:
    """A valid batch/v1 JobTemplateSpec that never starts a pod."""
    return {"spec": {
        "suspend": True,
        "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "noop", "image": "busybox:1.36", "command": ["true"]}],
        }},
    }}


def cronjob(name: str) -> Object:
    return {"metadata": {"name": name},
            "spec": {"schedule": "* * * * *", "jobTemplate": job_template()}}


def history_job(phase: str, owner: Object, minute: int) -> Object:
    """A Job ``owner`` (a created CronJob) ran at ``minute`` (unix minutes), before the bench."""
    meta = owner["metadata"]
    scheduled = datetime.fromtimestamp(minute * 60, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {
                "name": f"{meta['name']}-{minute}",
                "annotations": {ANNOTATIONS[phase]: scheduled},
                "ownerReferences": [{
                    "apiVersion": owner.get("apiVersion") or "batch/v1", "kind": "CronJob",
                    "name": meta["name"], "uid": meta["uid"],
                    "controller": True, "blockOwnerDeletion": True}]},
            "spec": job_template()["spec"]}


def finished_status(at: float) -> Object:
    """A Job status that reads Complete (batch/v1 validation: SuccessCriteriaMet first)."""
    now = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"status": {"startTime": now, "completionTime": now, "succeeded": 1, "conditions": [
        {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now},
        {"type": "Complete", "status": "True", "lastTransitionTime": now}]}}


def _retrying(call: Callable[[], Object]) -> Object | None:
    """``call()``, retried on server errors; None on AlreadyExists."""
    for attempt in range(5):
        try:
            return call()
        except AlreadyExists:
            return None
        except ApiError:
            if attempt == 4:
                raise
            time.sleep(0.2 * (attempt + 1))
    return None


def create_cronjobs(client: RESTClient, phase: str, namespace: str, n: int, threads: int,
                    history: int = 0) -> float:
    """Create ``cj-00000`` .. in parallel, the first ``history`` each with one finished Job;
    return the seconds it took.

    The Jobs ran at the start of the current minute: a controller that takes the newest Job's
    scheduled time as the last run (pyctrl) and one that takes the CronJob's creation (upstream)
    then both see the next run at the next minute, never one missed before they started.
    """
    resource = PYCTRL_CRONJOBS if phase == "pyctrl" else BATCH_CRONJOBS
    start = time.monotonic()
    minute = int(time.time()) // 60

    def one(i: int) -> None:
        name = f"cj-{i:05d}"
        created = _retrying(lambda: client.create(resource, cronjob(name), namespace))
        if i >= history:
            return
        owner = created if created is not None else client.get(resource, name, namespace)
        job = history_job(phase, owner, minute)
        _retrying(lambda: client.create(JOBS, job, namespace))
        status = finished_status(minute * 60 + 1)
        _retrying(lambda: client.patch(JOBS, job["metadata"]["name"], status, namespace,
                                       subresource="status"))

    with ThreadPoolExecutor(threads, thread_name_prefix="create") as pool:
        list(pool.map(one, range(n)))
    return time.monotonic() - start


def delete_all(cp: ControlPlane, namespace: str) -> None:
    """Delete every CronJob of both kinds and every Job in ``namespace`` (no GC is running).

    A collection of 10^4 objects can outlast the API server's 60 s request timeout (504,
    ``--delete-collection-workers`` is 1): the DELETE is repeated until it completes, so the
    next phase's controller never caches this phase's objects.
    """
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
    for path in (f"/apis/batch.pyctrl.io/v1/namespaces/{namespace}/cronjobs",
                 f"/apis/batch/v1/namespaces/{namespace}/cronjobs",
                 f"/apis/batch/v1/namespaces/{namespace}/jobs"):
        for _ in range(10):
            status, reply = cp.http.request("DELETE", path, body, timeout=300)
            if status < 500:
                break
        if status >= 300 and status != 404:
            print(f"cronjob-skew: cleanup of {path} failed: {status} {reply}", file=sys.stderr)


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
    controller = Controller(phase, cp, args, log_dir)
    if phase == "pyctrl" and importlib.util.find_spec("cronjob_controller.__main__") is None:
        raise PhaseError("cronjob_controller/__main__.py does not exist yet: "
                         "`python -m cronjob_controller` cannot run")
    watch = JobWatch(client, namespace)
    watch.start()
    sampler: ProcessSampler | None = None
    profiler = None
    try:
        wait_for_creation_slot()
        created_at = time.time()
        create_s = create_cronjobs(client, phase, namespace, n, args.create_threads, history)
        pid = controller.start()
        started = time.monotonic()
        started_wall = time.time()
        settled, settle_s = wait_settled(pid, started, args, controller.check)
        sync_s = controller.cache_sync_seconds()
        tick = math.ceil((time.time() + WINDOW_BEFORE + 1.0) / 60) * 60.0
        suffix = f"-{int(tick) // 60}"
        sleep_until(tick - WINDOW_BEFORE, controller.check)
        prior_jobs = len(watch.snapshot()) - history
        if profile_prefix is not None:
            profiler = start_profiler(pid, WINDOW_BEFORE + WINDOW_AFTER,
                                      profile_prefix.with_suffix(".collapsed"))
        sampler = ProcessSampler(pid)
        sampler.start()
        sleep_until(tick + WINDOW_AFTER, controller.check)
        usage = sampler.stop()
        deadline = tick + args.collect_timeout
        while watch.count_suffix(suffix) < n and time.time() < deadline:
            controller.check()
            time.sleep(0.5)
        jobs = [j for j in watch.snapshot() if j.name.endswith(suffix)]
    finally:
        if sampler is not None:
            sampler.stop()  # idempotent; ends the polling thread if the window was cut short
        log_path = controller.stop()
        watch.close()
    profile = (None if profiler is None or profile_prefix is None else finish_profiler(
        profiler, profile_prefix.with_suffix(".collapsed"), profile_prefix.with_suffix(".txt"),
        f"py-spy: python -m cronjob_controller, {n} CronJobs, window {iso(tick - WINDOW_BEFORE)}"
        f" .. {iso(tick + WINDOW_AFTER)}"))
    delete_all(cp, namespace)
    series[phase] = {"watch": [j.seen_at - tick for j in jobs],
                     "created": [j.created - tick for j in jobs]}
    cpu = usage["cpu_seconds"]
    result: dict[str, object] = {
        "controller": ("python -m cronjob_controller" if phase == "pyctrl"
                       else "kube-controller-manager --controllers=cronjob"),
        "workers": args.pyctrl_workers if phase == "pyctrl" else args.upstream_syncs,
        "namespace": namespace,
        "tick": iso(tick),
        **skew_fields(jobs, tick, n, ANNOTATIONS[phase]),
        "cache_sync_seconds": sync_s,
        "history_jobs": history,
        "cpu_seconds": cpu,
        "cpu_cores_avg": (None if not isinstance(cpu, float)
                          else round(cpu / (WINDOW_BEFORE + WINDOW_AFTER), 3)),
        "peak_rss_mib": usage["peak_rss_mib"], "hwm_rss_mib": usage["hwm_rss_mib"],
        "rss_samples": usage["rss_samples"],
        "window": [iso(tick - WINDOW_BEFORE), iso(tick + WINDOW_AFTER)],
        "create_cronjobs_s": round(create_s, 2),
        "create_started": iso(created_at),
        "controller_started": iso(started_wall),
        "settled": settled, "settle_s": round(settle_s, 1),
        "prior_jobs": prior_jobs,
        "watch_errors": len(watch.errors),
        "log": str(log_path),
    }
    if profile is not None:
        result["profile"] = profile
    if controller.exit_code is not None:
        result["exit_code"] = controller.exit_code
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
    if args.profile:
        args.results_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    log_dir = Path(tempfile.mkdtemp(prefix=f"cronjob-skew-{stamp}-"))
    phases = [args.only] if args.only else list(PHASES)
    result: dict[str, object] = {"cronjobs": args.cronjobs}
    series: dict[str, dict[str, list[float]]] = {}
    with ControlPlane(crd_dirs=[REPO / "crds"], controller_manager=False) as cp:
        result["machine"] = machine(cp)
        client = RESTClient.from_kubeconfig(cp.kubeconfig_path, qps=5000, burst=5000,
                                            pool_maxsize=args.create_threads + 4,
                                            user_agent="pyctrl-bench")
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
    phase_results = {p: r if isinstance(r := result.get(p), dict) else {} for p in PHASES}
    ratio = ratios(phase_results["pyctrl"], phase_results["upstream"], phase_results["limit"])
    result["ratio"] = ratio
    result["goals"] = goals(ratio)
    result["logs"] = str(log_dir)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    json_path = args.results_dir / f"cronjob-skew-{stamp}.json"
    result["json"] = str(json_path)
    if not args.no_plot and series:
        from bench.cronjob_skew_plot import plot_cdfs

        png = args.results_dir / f"cronjob-skew-{stamp}.png"
        plot_cdfs(series, png, f"CronJob skew at one tick, {args.cronjobs} CronJobs each")
        result["png"] = str(png)
    json_path.write_text(json.dumps(result, indent=2) + "\n")
    return result
