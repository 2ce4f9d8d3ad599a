"""Soak: the CronJob controller's RSS, threads and fds, minute by minute, under steady churn.

One run starts one throwaway control plane (envtest: etcd + kube-apiserver; no
kube-controller-manager: history cleanup deletes Jobs through the controller itself, and no
pods exist for the garbage collector to clean up) and, in namespace ``soak``:

* ``--cronjobs`` N ``batch.pyctrl.io/v1`` CronJobs, schedule ``* * * * *``,
  ``successfulJobsHistoryLimit: 1``, ``failedJobsHistoryLimit: 1``, Job template
  ``suspend: true`` (no pod would ever run), created by parallel threads before the controller
  starts;
* a bench-side *completer*: one WATCH on ``batch/v1`` Jobs (re-listing when the server ends it
  with an error) that marks every new, unfinished Job Complete through the status subresource
  (conditions SuccessCriteriaMet + Complete, ``startTime``, ``completionTime``,
  ``succeeded: 1``, as ``tests/integration/cronjob/env.py`` does) ``--complete-after`` seconds
  after it appears, on ``--complete-threads`` threads; so every minute each CronJob creates one
  Job and deletes the one before (history cleanup runs every minute);
* ``python -m cronjob_controller`` as a separate process (its own kubeconfig, metrics and probes
  off), so the figures are its own. It is started at ``--sample-second`` past a wall-clock
  minute, which is also when every later sample is taken: late in the minute, after the tick's
  burst, so samples compare like with like.

Sampling: at start (minute 0) and then every minute, :func:`read_process` reads
``/proc/PID/status`` (VmRSS, VmHWM, Threads), ``len(os.listdir(/proc/PID/fd))`` and
``/proc/PID/stat`` utime+stime; VmRSS is also polled every second for the per-minute peak
(a :class:`bench.cronjob_skew.probe.ProcessSampler`; the /proc readers are that module's).
Each sample carries the completer's counters (Jobs created so far, completed, still existing).

:func:`analyse` fits least-squares lines over the samples at or after ``--warmup`` minutes and
reports slopes per 10 minutes (RSS in MiB, threads, fds), maxima, and
``goal.rss_slope_mib_per_10min_lt_2`` (None when fewer than two steady samples exist, or when
:func:`check_churn` finds the controller created less than one tick's worth of Jobs). The
result is printed; it is written to ``bench/results/soak-<UTC timestamp>.json`` only with
``--save`` (results are git-ignored; commit one explicitly with ``git add -f``). A run takes
``--minutes`` plus about 2 minutes of setup. Real time on purpose: this measures real time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import queue
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.cronjob_skew import iso, job_template, machine
from bench.cronjob_skew.probe import (
    ProcessSampler,
    parse_status,
    stat_cpu_seconds,
    stat_fields,
    status_fields,
    summary,
)
from pyctrl.errors import AlreadyExists, ApiError, NotFound
from pyctrl.kube import JOBS, NAMESPACES, RawObject, Resource, RESTClient
from pyctrl.testing.envtest import ControlPlane
from pyctrl.testing.envtest.process import Proc, spawn

__all__ = [
    "Completer",
    "ProcSample",
    "add_arguments",
    "analyse",
    "check_churn",
    "least_squares_slope",
    "parse_status",
    "read_process",
    "run",
]

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
NAMESPACE = "soak"
CRONJOBS = Resource("batch.pyctrl.io", "v1", "cronjobs", "CronJob")
GOAL_RSS_SLOPE_MIB_PER_10MIN = 2.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cronjobs", type=int, default=2000, help="CronJobs (* * * * *)")
    parser.add_argument("--minutes", type=int, default=20, help="minutes sampled")
    # The event correlator's caches fill for about 10 minutes by design (up to max_similar=10
    # distinct messages per CronJob and reason, one a minute; LRUs of 4096 keys): a slope
    # that starts earlier measures that fill, not a leak (bench memprofile shows it level
    # off there; python -m bench memprofile).
    parser.add_argument("--warmup", type=float, default=10.0,
                        help="minutes left out of the slopes (the event caches fill for ~10)")
    parser.add_argument("--workers", type=int, default=16, help="cronjob_controller --workers")
    parser.add_argument("--qps", type=int, default=2000, help="controller client QPS/burst")
    parser.add_argument("--create-threads", type=int, default=16,
                        help="threads creating the CronJobs")
    parser.add_argument("--complete-threads", type=int, default=8,
                        help="threads marking Jobs Complete")
    parser.add_argument("--complete-after", type=float, default=2.0,
                        help="seconds between a Job appearing and the bench completing it")
    parser.add_argument("--sample-second", type=float, default=50.0,
                        help="second of the wall-clock minute at which samples are taken")
    parser.add_argument("--note", default="", help="free text stored in the result")
    parser.add_argument("--save", action="store_true",
                        help="write bench/results/soak-<timestamp>.json (or --results-dir)")
    parser.add_argument("--results-dir", type=Path, default=RESULTS,
                        help="where --save writes the JSON")


# -- /proc --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProcSample:
    """One reading of a process (sizes in KiB, as /proc reports them)."""

    rss_kib: int
    hwm_kib: int
    threads: int
    fds: int
    cpu_seconds: float


def read_process(pid: int) -> ProcSample | None:
    """RSS, peak RSS, threads, open fds and CPU seconds of ``pid``; None once it is gone."""
    status, stat = status_fields(pid), stat_fields(pid)
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    if status is None or stat is None:
        return None
    return ProcSample(
        rss_kib=status.get("VmRSS", 0), hwm_kib=status.get("VmHWM", 0),
        threads=status.get("Threads", 0), fds=fds, cpu_seconds=stat_cpu_seconds(stat),
    )


# -- analysis -----------------------------------------------------------------------------------
def least_squares_slope(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Slope of the least-squares line through (xs, ys); None for < 2 points or equal xs."""
    n = len(xs)
    if n != len(ys):
        raise ValueError("xs and ys differ in length")
    if n < 2:
        return None
    mx = sum(xs) / n
    my = sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


def _per_10(slope: float | None) -> float | None:
    return None if slope is None else round(slope * 10.0, 3)


def analyse(series: Sequence[dict[str, float]], warmup_minutes: float) -> dict[str, object]:
    """Slopes per 10 min over the samples with ``minute >= warmup_minutes``, and maxima.

    Each sample needs ``minute``, ``rss_mib``, ``threads`` and ``fds``.
    """
    steady = [s for s in series if s["minute"] >= warmup_minutes]
    xs = [s["minute"] for s in steady]
    rss_slope = _per_10(least_squares_slope(xs, [s["rss_mib"] for s in steady]))
    return {
        "warmup_minutes": warmup_minutes,
        "steady_samples": len(steady),
        "rss_slope_mib_per_10min": rss_slope,
        "threads_slope_per_10min": _per_10(
            least_squares_slope(xs, [s["threads"] for s in steady])),
        "fds_slope_per_10min": _per_10(least_squares_slope(xs, [s["fds"] for s in steady])),
        "rss_mib_steady_first": steady[0]["rss_mib"] if steady else None,
        "rss_mib_last": series[-1]["rss_mib"] if series else None,
        "max_rss_mib": max((s["rss_mib"] for s in series), default=None),
        "max_threads": max((int(s["threads"]) for s in series), default=None),
        "max_fds": max((int(s["fds"]) for s in series), default=None),
        "goal": {"rss_slope_mib_per_10min_lt_2": (
            None if rss_slope is None else rss_slope < GOAL_RSS_SLOPE_MIB_PER_10MIN)},
    }


def check_churn(cronjobs: int, minutes_run: int, jobs_created: int) -> str | None:
    """Why the run does not measure churn (None when it does).

    The controller should create one Job per CronJob per minute; fewer than one tick's worth
    in the whole run means it was not working (a broken build, no API access), and a flat
    RSS would then prove nothing.
    """
    if minutes_run >= 1 and jobs_created < cronjobs:
        return (f"the controller created {jobs_created} Jobs in {minutes_run} minutes for "
                f"{cronjobs} CronJobs (expected about {cronjobs * minutes_run}): "
                "no churn was measured")
    return None


# -- the completer ------------------------------------------------------------------------------
def _finished(job: RawObject) -> bool:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return True
    return False


def _now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Completer:
    """Watch Jobs in one namespace and mark each new, unfinished one Complete.

    ``counts()`` gives Jobs created (distinct UIDs seen), completed (by us), existing (seen and
    not deleted), errors, and the backlog. ``close()`` ends the watch and joins every thread.
    """

    def __init__(self, client: RESTClient, namespace: str, *, threads: int,
                 after: float) -> None:
        self.client, self.namespace, self.after = client, namespace, after
        self._lock = threading.Lock()
        self._seen: set[str] = set()  # every Job UID ever seen
        self._live: set[str] = set()  # UIDs that exist now
        self._queued: set[str] = set()
        self._done: set[str] = set()  # UIDs this completer marked Complete
        self.errors: list[str] = []
        self.latencies: list[float] = []  # seen -> status patched, seconds
        self._work: queue.Queue[tuple[float, str, str] | None] = queue.Queue()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._stream: object = None
        self._threads = [threading.Thread(target=self._watch, name="soak-jobwatch",
                                          daemon=True)]
        self._threads += [threading.Thread(target=self._complete, name=f"soak-complete-{i}",
                                           daemon=True) for i in range(threads)]

    def start(self, timeout: float = 30.0) -> None:
        for thread in self._threads:
            thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError(f"the Job watch in {self.namespace} did not open")

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {"jobs_created": len(self._seen), "jobs_completed": len(self._done),
                    "jobs_existing": len(self._live), "completer_errors": len(self.errors),
                    "completer_backlog": len(self._queued)}

    def _see(self, job: RawObject, now: float) -> None:
        meta = job["metadata"]
        uid, name = str(meta["uid"]), str(meta["name"])
        with self._lock:
            self._seen.add(uid)
            self._live.add(uid)
            if _finished(job) or uid in self._queued or uid in self._done:
                return
            self._queued.add(uid)
        self._work.put((now, name, uid))

    def _watch(self) -> None:
        rv: str | None = None
        while not self._stop.is_set():
            try:
                if rv is None:
                    listed = self.client.list(JOBS, self.namespace)
                    rv = str(listed["metadata"]["resourceVersion"])
                    now = time.monotonic()
                    items = listed.get("items") or []
                    with self._lock:
                        self._live = {str(j["metadata"]["uid"]) for j in items}
                    for item in items:
                        self._see(item, now)
                stream = self.client.watch(JOBS, self.namespace, resource_version=rv,
                                           timeout_seconds=300)
                self._stream = stream
                self._ready.set()
                if self._stop.is_set():  # close() ran before the stream was published
                    stream.close()
                for event in stream:
                    obj = event["object"]
                    kind = event["type"]
                    if kind == "ERROR":
                        rv = None  # 410 Gone and friends: list again
                        break
                    rv = str(obj["metadata"]["resourceVersion"])
                    if kind in ("ADDED", "MODIFIED"):
                        self._see(obj, time.monotonic())
                    elif kind == "DELETED":
                        with self._lock:
                            self._live.discard(str(obj["metadata"]["uid"]))
            except ApiError as err:
                if self._stop.is_set():
                    return
                with self._lock:
                    self.errors.append(f"watch: {err}")
                self._stop.wait(0.5)
                rv = None

    def _complete(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            seen, name, uid = item
            delay = seen + self.after - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                return
            now = _now_rfc3339()
            status = {"startTime": now, "completionTime": now, "succeeded": 1, "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now},
                {"type": "Complete", "status": "True", "lastTransitionTime": now}]}
            try:
                self.client.patch(JOBS, name, {"status": status}, self.namespace,
                                  subresource="status")
                with self._lock:
                    self._done.add(uid)
                    self.latencies.append(time.monotonic() - seen)
            except NotFound:
                pass  # already cleaned up
            except ApiError as err:
                if self._stop.is_set():
                    return
                with self._lock:
                    self.errors.append(f"complete {name}: {err}")
            finally:
                with self._lock:
                    self._queued.discard(uid)

    def close(self) -> None:
        self._stop.set()
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()
        for _ in self._threads[1:]:
            self._work.put(None)
        for thread in self._threads:
            thread.join(10.0)


# -- setup --------------------------------------------------------------------------------------
def cronjob(name: str) -> RawObject:
    return {"metadata": {"name": name},
            "spec": {"schedule": "* * * * *", "successfulJobsHistoryLimit": 1,
                     "failedJobsHistoryLimit": 1, "jobTemplate": job_template()}}


def create_cronjobs(client: RESTClient, n: int, threads: int) -> float:
    """Create ``soak-00000`` .. in parallel; return the seconds it took."""
    start = time.monotonic()

    def one(i: int) -> None:
        for attempt in range(5):
            try:
                client.create(CRONJOBS, cronjob(f"soak-{i:05d}"), NAMESPACE)
                return
            except AlreadyExists:
                return
            except ApiError:
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))

    with ThreadPoolExecutor(threads, thread_name_prefix="create") as pool:
        list(pool.map(one, range(n)))
    return time.monotonic() - start


def start_controller(cp: ControlPlane, args: argparse.Namespace, log_path: Path) -> Proc:
    argv = [sys.executable, "-m", "cronjob_controller", "--kubeconfig", cp.kubeconfig_path,
            "--namespace", NAMESPACE, "--workers", str(args.workers),
            "--qps", str(args.qps), "--burst", str(args.qps), "--log-level", "warning",
            "--metrics-bind-address", "0", "--health-probe-bind-address", "0"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return spawn("cronjob_controller", argv, log_path, env=env)


def _next_wall_second(second: float) -> float:
    """The next wall-clock time (>= 2 s from now) at ``second`` past a minute."""
    now = time.time()
    at = math.floor(now / 60) * 60 + second
    while at < now + 2.0:
        at += 60.0
    return at


# -- the run ------------------------------------------------------------------------------------
def _sample(pid: int, started: float, completer: Completer, peak_kib: int,
            last: dict[str, float] | None) -> dict[str, float] | None:
    reading = read_process(pid)
    if reading is None:
        return None
    elapsed = time.monotonic() - started
    sample: dict[str, float] = {
        "minute": round(elapsed / 60.0, 3),
        "rss_mib": round(reading.rss_kib / 1024, 2),
        "rss_peak_mib": round(max(peak_kib, reading.rss_kib) / 1024, 2),
        "hwm_mib": round(reading.hwm_kib / 1024, 2),
        "threads": reading.threads,
        "fds": reading.fds,
        "cpu_seconds": round(reading.cpu_seconds, 2),
        "cpu_cores": (0.0 if last is None else round(
            (reading.cpu_seconds - last["cpu_seconds"])
            / max(1e-9, (elapsed / 60.0 - last["minute"]) * 60.0), 3)),
        **completer.counts(),
    }
    return sample


def run(args: argparse.Namespace) -> dict[str, object]:
    if args.cronjobs < 1 or args.minutes < 1:
        raise SystemExit("--cronjobs and --minutes must be >= 1")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    log_dir = Path(tempfile.mkdtemp(prefix=f"soak-{stamp}-"))
    result: dict[str, object] = {
        "cronjobs": args.cronjobs, "minutes": args.minutes, "workers": args.workers,
        "history_limits": {"successful": 1, "failed": 1},
        "complete_after_s": args.complete_after, "note": args.note,
    }
    series: list[dict[str, float]] = []
    error: str | None = None
    with ControlPlane(crd_dirs=[REPO / "crds"], controller_manager=False) as cp:
        result["machine"] = machine(cp)
        client = RESTClient.from_kubeconfig(
            cp.kubeconfig_path, qps=5000, burst=5000, user_agent="pyctrl-bench",
            pool_maxsize=max(args.create_threads, args.complete_threads) + 4)
        completer = Completer(client, NAMESPACE, threads=args.complete_threads,
                              after=args.complete_after)
        proc: Proc | None = None
        try:
            with contextlib.suppress(AlreadyExists):
                client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
            completer.start()
            print(f"soak: creating {args.cronjobs} CronJobs", file=sys.stderr)
            result["create_cronjobs_s"] = round(
                create_cronjobs(client, args.cronjobs, args.create_threads), 2)
            at = _next_wall_second(args.sample_second)
            time.sleep(max(0.0, at - time.time()))
            proc = start_controller(cp, args, log_dir / "cronjob_controller.log")
            started = time.monotonic()
            result["controller_started"] = iso(time.time())
            first = _sample(proc.pid, started, completer, 0, None)
            if first is not None:
                series.append(first)
            for minute in range(1, args.minutes + 1):
                due = started + 60.0 * minute
                peak = ProcessSampler(proc.pid, interval=1.0)
                peak.start()
                try:
                    while (left := due - time.monotonic()) > 0 and proc.running():
                        time.sleep(min(left, 1.0))
                finally:
                    peak.stop()  # joins its thread
                sample = _sample(proc.pid, started, completer, peak.peak_rss_kib,
                                 series[-1] if series else None)
                if sample is None or not proc.running():
                    error = f"the controller exited early; log tail:\n{proc.log_tail()}"
                    break
                series.append(sample)
                print(f"soak: minute {minute}: rss {sample['rss_mib']} MiB, threads "
                      f"{sample['threads']}, fds {sample['fds']}, jobs "
                      f"{sample['jobs_created']}", file=sys.stderr)
        except (ApiError, RuntimeError) as err:
            error = str(err)
        finally:
            if proc is not None:
                proc.stop(timeout=30.0)
                result["controller_exit_code"] = proc.popen.returncode
            completer.close()
            client.close()
    counts = completer.counts()
    if error is None:
        error = check_churn(args.cronjobs, len(series) - 1, counts["jobs_created"])
        if error is not None and proc is not None:
            error += f"; log tail:\n{proc.log_tail(5)}"
    result["machine"]["loadavg_1m_end"] = round(os.getloadavg()[0], 2)  # type: ignore[index]
    analysis = analyse(series, args.warmup)
    if error is not None:
        analysis["goal"] = {"rss_slope_mib_per_10min_lt_2": None}  # no verdict on a bad run
    result.update(analysis)
    result["cpu_seconds_total"] = series[-1]["cpu_seconds"] if series else None
    result["jobs"] = counts
    result["jobs_expected_about"] = args.cronjobs * max(0, len(series) - 1)
    result["completion_latency_s"] = summary(completer.latencies)
    result["completer_error_samples"] = completer.errors[:5]
    if error is not None:
        result["error"] = error
    result["series"] = series
    result["log"] = str(log_dir / "cronjob_controller.log")
    if args.save:
        args.results_dir.mkdir(parents=True, exist_ok=True)
        path = args.results_dir / f"soak-{stamp}.json"
        result["json"] = str(path)
        path.write_text(json.dumps(result, indent=2) + "\n")
    return result
