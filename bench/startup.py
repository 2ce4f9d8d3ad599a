"""Start-up: ``python -m cronjob_controller`` to caches synced and first reconcile, vs the KCM.

Issue 28 item 4 (goal: pyctrl's caches synced in <= 1.2x kube-controller-manager's time with
2000 CronJobs + 2000 Jobs), without the minutes of a ``cronjob-skew`` run per figure.

One run starts one throwaway control plane (envtest: etcd + kube-apiserver, the CRDs of
``crds/``), and in namespace ``startup`` creates ``--cronjobs N`` ``batch.pyctrl.io/v1``
CronJobs, each with one finished Job (``create_cronjobs`` of ``bench.cronjob_skew``, its
``history`` Jobs), and ``N`` ``batch/v1`` CronJobs of the same names. Their schedule fires
once a year, at a minute ``SCHEDULE_AHEAD`` (30 days) from now, so no run is due while the
bench runs: the controllers only fill their caches and reconcile, no Job is created.

The Jobs are shared on purpose: each controller caches all Jobs of a cluster, so with a Job
set per kind both would cache 2N Jobs. Here each caches N CronJobs of its kind and the same
N Jobs, as in ``cronjob-skew``'s phases. The Jobs' controller reference names pyctrl's
CronJob; the KCM's cronjob controller matches a CronJob's Jobs by the controller reference's
name alone (``getJobsToBeReconciled``), so it too reconciles each of its CronJobs with one
finished Job. ``jobs_after`` (the Jobs at the end; should be N) checks nothing was created.

Then ``--warmup-rounds`` (default 1, not counted) and ``--runs K`` rounds; each round starts
pyctrl's controller (as ``cronjob-skew`` does:
:class:`bench.cronjob_skew.controllers.Controller`, bytecode compiled as in the image) and
kube-controller-manager (``--controllers=cronjob``,
``--vmodule=cronjob_controllerv2=4,reflector=4``) one after the other, never together, pyctrl
first in odd rounds and the KCM first in even ones. Each is stopped once settled (its CPU below
``--settle-cores`` over 3 s: its initial reconciles are done) and a second later the other
starts. The warm-up round absorbs the first start's status writes (each controller records
``lastSuccessfulTime`` once) and cold caches. Per start, seconds from the process's start
(``/proc``, boot clock):

* ``cache_sync_seconds``: to caches synced (pyctrl: ``/readyz`` 200, polled every 20 ms; KCM:
  its cronjob controller's "Caches are synced" log line);
* ``first_reconcile_seconds``: to the first reconcile finished (pyctrl: its
  ``pyctrl_controller_first_reconcile_timestamp_seconds`` gauge, read after settling; KCM: the
  first "Re-queuing cronjob" line, logged at the end of each sync at ``-v=4`` of that one file);
* KCM only, ``informers_populated_seconds``: to its Job and CronJob reflectors' "Caches
  populated" lines (both initial lists stored).

Read the KCM's ``cache_sync_seconds`` with care: in v1.35 its "Caches are synced" lines do not
name their controller, five waits log one each (the cronjob controller's, the service-account
token controller's, three of the secure serving's), and ``WaitForCacheSync`` polls every
100 ms. The figure is the first such line after "Starting cronjob controller", which can be
another wait's, up to one poll before the cronjob controller's own: a lower bound, so its
ratio is pessimistic for pyctrl. The first reconcile has no such ambiguity.

Per side ``best``/``median``/``max``/``spread`` (max - min) over the ``K`` rounds, and
``ratio``: pyctrl / KCM per round (both starts of one round), with the same summary; ``goal``
judges the median cache-sync ratio against 1.2.

``importtime``: ``python -X importtime -c 'import cronjob_controller.__main__'`` (compiled
bytecode; one unmeasured run first, then ``--import-runs`` measured, median): ``import_seconds``
(the cumulative time of the top-level ``cronjob_controller`` imports), ``interpreter_seconds``
(everything else: the interpreter's own start-up imports), ``process_seconds`` (the whole
process, wall), and the median run's top 10 by cumulative and by self time.

``--profile``: after the rounds, ``--profile-starts`` more starts of pyctrl's controller under
``py-spy record`` (it spawns the interpreter, so sampling covers the start from its first
instruction; ``--function --nonblocking --gil``: Python CPU, by function) at
``--profile-rate`` Hz until ``/readyz`` answers 200 (py-spy then gets SIGINT and writes its
samples); the samples of all starts make one top-30 table (by total and by self), written
next to the JSON as ``startup-<stamp>-profile.txt``. Profiled starts are slower and are not
in the figures.

The JSON goes to ``bench/results/startup-<UTC stamp>.json`` (git-ignored, ``command`` records
the command line); the controllers' logs to a temp dir (``logs``). A run of 2000 takes about
2-3 minutes (creating the objects is most of it). Real time on purpose: real processes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.cronjob_skew import machine
from bench.cronjob_skew.controllers import (
    REPO,
    Controller,
    PhaseError,
    add_controller_arguments,
    ensure_bytecode,
    python_env,
    wait_settled,
)
from bench.cronjob_skew.objects import bench_client, create_cronjobs
from bench.cronjob_skew.profile import parse_collapsed, profiler_flags, py_spy, top_table
from bench.cronjob_skew.sync import (
    cache_sync_seconds,
    klog_populated,
    process_start,
    wall_to_boottime,
)
from pyctrl.errors import AlreadyExists
from pyctrl.kube import JOBS, NAMESPACES
from pyctrl.testing.envtest import ControlPlane

__all__ = ["ImportLine", "ImportSummary", "add_arguments", "import_summary", "parse_importtime",
           "ratios", "round_order", "run", "stats"]

RESULTS = Path(__file__).resolve().parent / "results"
NAMESPACE = "startup"
SIDES = ("pyctrl", "upstream")
SCHEDULE_AHEAD = 30 * 86400.0  # the CronJobs' one run a year is this far ahead
# "Re-queuing cronjob" per sync, "Caches populated" per informer: two files at -v=4
KCM_ARGS = ("--vmodule=cronjob_controllerv2=4,reflector=4",)
KCM_TYPES = ("*v1.Job", "*v1.CronJob")  # the cronjob controller's informers
PAUSE = 1.0  # seconds between one controller's stop and the next start
GOAL = 1.2  # issue 28 item 4: caches synced in <= 1.2x the KCM's time
IMPORT = "import cronjob_controller.__main__"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cronjobs", type=int, default=2000,
                        help="CronJobs of each kind, and finished Jobs (shared)")
    parser.add_argument("--runs", type=int, default=5, help="measured rounds")
    parser.add_argument("--warmup-rounds", type=int, default=1,
                        help="rounds before the measured ones, not counted")
    parser.add_argument("--import-runs", type=int, default=3,
                        help="measured python -X importtime runs")
    add_controller_arguments(parser, settle_timeout=120.0)
    parser.add_argument("--profile", action="store_true",
                        help="also profile pyctrl's start (spawn to ready) with py-spy; "
                             "write a top-30 table next to the JSON")
    parser.add_argument("--profile-starts", type=int, default=3,
                        help="--profile: profiled starts, their samples summed")
    parser.add_argument("--profile-rate", type=int, default=500,
                        help="--profile: py-spy samples per second")
    parser.add_argument("--results-dir", type=Path, default=RESULTS,
                        help="where the JSON and profile go")
    parser.set_defaults(warmup=0.0)  # wait_settled's minimum wait after start


# -- pure helpers ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ImportLine:
    """One line of ``-X importtime``: microseconds, and the nesting depth (0: top level)."""

    name: str
    self_us: int
    cumulative_us: int
    depth: int


_IMPORTTIME = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)\s*$")


def parse_importtime(stderr: str) -> list[ImportLine]:
    """The ``import time:`` lines of ``python -X importtime`` (its header and other lines are
    skipped); two spaces of indent per nesting level."""
    out: list[ImportLine] = []
    for line in stderr.splitlines():
        m = _IMPORTTIME.match(line)
        if m is not None:
            out.append(ImportLine(m.group(4), int(m.group(1)), int(m.group(2)),
                                  len(m.group(3)) // 2))
    return out


@dataclass(frozen=True)
class ImportSummary:
    """One ``-X importtime`` run, summed (see :func:`import_summary`)."""

    import_seconds: float
    interpreter_seconds: float
    modules: int
    top_cumulative: list[dict[str, object]]
    top_self: list[dict[str, object]]


def import_summary(lines: Sequence[ImportLine], top: int = 10) -> ImportSummary:
    """``import_seconds``: cumulative time of the top-level ``cronjob_controller`` imports;
    ``interpreter_seconds``: the self time of every other line (the interpreter's start-up
    imports, ``site`` and the like); the top ``top`` lines by cumulative and by self time."""
    ours = [x for x in lines if x.depth == 0 and (x.name == "cronjob_controller"
                                                  or x.name.startswith("cronjob_controller."))]
    ours_us = sum(x.cumulative_us for x in ours)
    all_us = sum(x.self_us for x in lines)

    def rows(ranked: list[ImportLine]) -> list[dict[str, object]]:
        return [{"module": x.name, "depth": x.depth,
                 "cumulative_ms": round(x.cumulative_us / 1e3, 1),
                 "self_ms": round(x.self_us / 1e3, 1)} for x in ranked[:top]]

    return ImportSummary(
        import_seconds=round(ours_us / 1e6, 4),
        interpreter_seconds=round((all_us - ours_us) / 1e6, 4), modules=len(lines),
        top_cumulative=rows(sorted(lines, key=lambda x: x.cumulative_us, reverse=True)),
        top_self=rows(sorted(lines, key=lambda x: x.self_us, reverse=True)))


def stats(values: Sequence[float | None]) -> dict[str, object]:
    """best (min) / median / max / spread (max - min) of the known values; ``n`` counts them,
    ``missing`` the unknown ones."""
    known = sorted(v for v in values if v is not None)
    if not known:
        return {"n": 0, "missing": len(values)}
    return {"n": len(known), "best": round(known[0], 3),
            "median": round(statistics.median(known), 3), "max": round(known[-1], 3),
            "spread": round(known[-1] - known[0], 3), "missing": len(values) - len(known)}


def ratios(pyctrl: Mapping[str, float | None], upstream: Mapping[str, float | None]
           ) -> dict[str, float | None]:
    """pyctrl / KCM of each figure both starts of one round have."""
    out: dict[str, float | None] = {}
    for key, mine in pyctrl.items():
        theirs = upstream.get(key)
        out[key] = (None if mine is None or theirs is None or theirs <= 0
                    else round(mine / theirs, 3))
    return out


def round_order(index: int) -> tuple[str, str]:
    """Which controller starts first in round ``index`` (1-based; alternating, pyctrl first in
    odd rounds)."""
    return ("pyctrl", "upstream") if index % 2 == 1 else ("upstream", "pyctrl")


def one_year_schedule_tick(now: float) -> float:
    """The minute the CronJobs' only run of the year falls on (``SCHEDULE_AHEAD`` from now)."""
    return math.ceil((now + SCHEDULE_AHEAD) / 60) * 60.0


# -- the measurements -------------------------------------------------------------------------
def measure_imports(runs: int) -> dict[str, object]:
    """``python -X importtime -c IMPORT``: one warm run, then ``runs`` measured (median)."""
    ensure_bytecode()
    argv = [sys.executable, "-X", "importtime", "-c", IMPORT]
    measured: list[tuple[ImportSummary, float]] = []
    for i in range(runs + 1):
        started = time.monotonic()
        done = subprocess.run(argv, env=python_env(), capture_output=True, text=True,
                              timeout=120, check=False)
        wall = time.monotonic() - started
        if done.returncode != 0:
            raise PhaseError(f"{shlex.join(argv)} exited {done.returncode}: "
                             f"{done.stderr[-2000:]}")
        if i:
            measured.append((import_summary(parse_importtime(done.stderr)), wall))
    median_run = sorted((m for m, _ in measured),
                        key=lambda m: m.import_seconds)[len(measured) // 2]
    return {
        "command": f"python -X importtime -c '{IMPORT}'", "runs": runs,
        "import_seconds": round(statistics.median(m.import_seconds for m, _ in measured), 4),
        "interpreter_seconds": round(statistics.median(
            m.interpreter_seconds for m, _ in measured), 4),
        "process_seconds": round(statistics.median(w for _, w in measured), 4),
        "import_seconds_each": [m.import_seconds for m, _ in measured],
        "modules": median_run.modules,
        "top_cumulative": median_run.top_cumulative, "top_self": median_run.top_self,
    }


# cache_sync_seconds, first_reconcile_seconds (and the KCM's informers_populated_seconds)
Figures = dict[str, float | None]
FIGURES = ("cache_sync_seconds", "first_reconcile_seconds")


def start_once(side: str, cp: ControlPlane, args: argparse.Namespace, log_dir: Path,
               label: str) -> tuple[Figures, dict[str, object]]:
    """Start one controller, wait until it settled, read its figures, stop it; the figures,
    and them with how the start went."""
    controller = Controller(side, cp, args, log_dir,
                            extra_args=KCM_ARGS if side == "upstream" else (),
                            log_name=f"cronjob_controller-{label}.log")
    pid = controller.start()
    started = time.monotonic()
    try:
        settled, settle_s = wait_settled(pid, started, args, controller.check)
        figures: Figures = {"cache_sync_seconds": controller.cache_sync_seconds(),
                            "first_reconcile_seconds": controller.first_reconcile_seconds()}
        if side == "upstream":
            wall = klog_populated(controller.log_text() or "", KCM_TYPES)
            figures["informers_populated_seconds"] = cache_sync_seconds(
                process_start(pid), None if wall is None else wall_to_boottime(wall))
    finally:
        controller.stop()
    time.sleep(PAUSE)
    return figures, {**figures, "settled": settled, "settle_s": round(settle_s, 1)}


@dataclass(frozen=True)
class Round:
    """One round: each side's figures, their ratios, and the record for the JSON."""

    figures: dict[str, Figures]
    ratio: Figures
    record: dict[str, object]


def one_round(index: int, cp: ControlPlane, args: argparse.Namespace,
              log_dir: Path, label: str) -> Round:
    order = round_order(index)
    figures: dict[str, Figures] = {}
    record: dict[str, object] = {"round": index, "order": list(order)}
    for side in order:
        figures[side], record[side] = start_once(side, cp, args, log_dir, f"{label}{index}")
    ratio = ratios(figures["pyctrl"], figures["upstream"])
    record["ratio"] = ratio
    line = "  ".join(f"{side} {figures[side]['cache_sync_seconds']} / "
                     f"{figures[side]['first_reconcile_seconds']} s" for side in order)
    print(f"startup: {label}round {index} (cache sync / first reconcile): {line}",
          file=sys.stderr)
    return Round(figures, ratio, record)


def profile_starts(cp: ControlPlane, args: argparse.Namespace, log_dir: Path,
                   prefix: Path) -> dict[str, object]:
    """``--profile``: pyctrl's start under py-spy, spawn to ready, ``--profile-starts`` times."""
    exe = py_spy()
    if exe is None:
        raise PhaseError("--profile needs py-spy: pip install py-spy")
    flags = [*profiler_flags(gil=True), "--rate", str(args.profile_rate), "--format", "raw"]
    raws: list[Path] = []
    ready: list[float | None] = []
    for i in range(args.profile_starts):
        raw = prefix.parent / f"{prefix.name}-{i}.collapsed"
        controller = Controller("pyctrl", cp, args, log_dir,
                                log_name=f"cronjob_controller-profile-{i}.log",
                                prefix=[exe, "record", *flags, "--output", str(raw), "--"])
        controller.start()
        try:
            assert controller.readyz is not None and controller.proc is not None
            ready.append(controller.cache_sync_seconds(timeout=args.settle_timeout))
            with contextlib.suppress(ProcessLookupError):
                os.kill(controller.proc.pid, signal.SIGINT)  # py-spy writes, ends the child
            with contextlib.suppress(subprocess.TimeoutExpired):
                controller.proc.popen.wait(30)
        finally:
            controller.stop()
        time.sleep(PAUSE)
        if raw.exists():
            raws.append(raw)
    if not raws:
        return {"error": f"py-spy wrote no samples; see the logs in {log_dir}"}
    lines = [line for raw in raws for line in raw.read_text().splitlines()]
    profile = parse_collapsed(lines)
    table = prefix.with_suffix(".txt")
    table.write_text(top_table(profile, 30, (
        f"py-spy record {' '.join(flags)}: python -m cronjob_controller, spawn to /readyz 200, "
        f"{args.cronjobs} CronJobs + {args.cronjobs} Jobs, {len(raws)} starts")) + "\n")
    n = max(profile.samples, 1)
    return {"tool": f"py-spy record {' '.join(flags)}", "starts": len(raws),
            "samples": profile.samples, "table": str(table), "raw": [str(r) for r in raws],
            "ready_seconds_profiled": ready,
            "top_self": [{"function": f, "percent": round(100 * c / n, 1)}
                         for f, c in profile.self_counts.most_common(5)]}


# -- the run ------------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> dict[str, object]:
    if args.cronjobs < 1 or args.runs < 1:
        raise SystemExit("--cronjobs and --runs must be >= 1")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    log_dir = Path(tempfile.mkdtemp(prefix=f"startup-{stamp}-"))
    args.results_dir.mkdir(parents=True, exist_ok=True)
    n = args.cronjobs
    result: dict[str, object] = {"cronjobs": n, "jobs": n, "runs": args.runs,
                                 "command": "python -m bench " + shlex.join(sys.argv[1:])}
    print("startup: python -X importtime", file=sys.stderr)
    result["importtime"] = measure_imports(args.import_runs)
    with ControlPlane(crd_dirs=[REPO / "crds"], controller_manager=False) as cp:
        result["machine"] = machine(cp)
        client = bench_client(cp, args.create_threads)
        try:
            with contextlib.suppress(AlreadyExists):
                client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
            tick = one_year_schedule_tick(time.time())
            print(f"startup: creating {n} + {n} CronJobs and {n} Jobs", file=sys.stderr)
            create_s = create_cronjobs(client, "pyctrl", NAMESPACE, n, args.create_threads,
                                       history=n, tick=tick)
            create_s += create_cronjobs(client, "upstream", NAMESPACE, n, args.create_threads,
                                        history=0, tick=tick)
            result["setup"] = {"namespace": NAMESPACE, "create_s": round(create_s, 1),
                               "schedule_fires": datetime.fromtimestamp(tick, UTC).isoformat()}
            warmups = [one_round(i, cp, args, log_dir, "warmup-")
                       for i in range(1, args.warmup_rounds + 1)]
            rounds = [one_round(i, cp, args, log_dir, "") for i in range(1, args.runs + 1)]
            if args.profile:
                print("startup: profiling pyctrl's start", file=sys.stderr)
                result["profile"] = profile_starts(
                    cp, args, log_dir, args.results_dir / f"startup-{stamp}-profile")
            result["jobs_after"] = len(client.list(JOBS, NAMESPACE).get("items") or [])
        finally:
            client.close()
    result["loadavg_1m_end"] = round(os.getloadavg()[0], 2)
    for side in SIDES:
        keys = [*FIGURES, *(("informers_populated_seconds",) if side == "upstream" else ())]
        result[side] = {key: stats([r.figures[side].get(key) for r in rounds]) for key in keys}
    ratio = {key: stats([r.ratio[key] for r in rounds]) for key in FIGURES}
    result["ratio"] = ratio
    median = ratio["cache_sync_seconds"].get("median")
    result["goal"] = {"cache_sync_vs_kcm": median, "target": GOAL,
                      "met": median <= GOAL if isinstance(median, float) else None}
    result["rounds"] = [r.record for r in rounds]
    result["warmup_rounds"] = [r.record for r in warmups]
    result["logs"] = str(log_dir)
    json_path = args.results_dir / f"startup-{stamp}.json"
    result["json"] = str(json_path)
    json_path.write_text(json.dumps(result, indent=2) + "\n")
    return result
