"""The ``limit`` phase of ``bench.cronjob_skew``: the tick's Jobs created by nothing but a client.

Contract: :func:`run_limit_phase` measures how fast the same API server accepts the tick's
``N`` Jobs when no controller logic runs: the Go anchor ``bench/anchors/jobcreate`` (client-go,
``--limit-workers`` goroutines, protobuf, no client-side rate limit; built from the Go module
proxy by :func:`bench.gobuild.build_anchor`) creates ``cj-NNNNN-<minute>`` in the namespace
``skew-limit``, each a copy of the Job pyctrl's controller builds for the CronJob ``cj-00000``
at the phase's tick ``T`` (:func:`cronjob_controller.jobs.build_job`: same metadata, owner
reference, annotation and spec, so the same bytes per Job). ``T`` is a whole second about 3 s
after the phase starts (the program has connected by then); the goroutines start at ``T``.

Skew is defined as for the controllers' phases: the bench's own WATCH sees each Job's ADDED
event at ``seen``, skew = ``seen - T`` (and ``creationTimestamp - T``), so ``limit.p99`` is
comparable with ``pyctrl.p99``. The program's own view (response time - T per Job, Jobs/s,
retries, its CPU seconds and peak RSS) is kept under ``client``. The caller deletes the
namespace's objects afterwards. Raises :class:`PhaseError` when Go is missing or the program
fails.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.cronjob_skew.controllers import PhaseError
from bench.cronjob_skew.probe import CpuTrace, JobWatch, burst_fields, plane_pids
from bench.cronjob_skew.report import skew_fields
from bench.gobuild import build_anchor
from cronjob_controller import api
from cronjob_controller.api import SCHEDULED_TIMESTAMP_ANNOTATION
from cronjob_controller.jobs import build_job
from pyctrl.api import convert
from pyctrl.errors import AlreadyExists
from pyctrl.kube import NAMESPACES, RESTClient
from pyctrl.testing.envtest import ControlPlane

__all__ = ["LIMIT_NAMESPACE", "limit_job", "run_limit_phase"]

LIMIT_NAMESPACE = "skew-limit"
START_DELAY = 3.0  # seconds from the phase start to T: the program starts and connects first


def limit_job(namespace: str, tick: float, job_template: dict[str, object]) -> dict[str, object]:
    """The Job pyctrl's controller would create for ``cj-00000`` at ``tick``."""
    cronjob = {"metadata": {"name": "cj-00000", "namespace": namespace,
                            "uid": "00000000-0000-4000-8000-000000000000"},
               "spec": {"schedule": "* * * * *", "jobTemplate": job_template}}
    return build_job(convert(api.CronJob, cronjob), datetime.fromtimestamp(tick, UTC), UTC)


def run_limit_phase(cp: ControlPlane, client: RESTClient, args: argparse.Namespace,
                    log_dir: Path, job_template: dict[str, object],
                    series: dict[str, dict[str, list[float]]]) -> dict[str, object]:
    n: int = args.cronjobs
    binary = build_anchor("jobcreate")
    if binary is None:
        raise PhaseError("no `go` on PATH: cannot build bench/anchors/jobcreate")
    with contextlib.suppress(AlreadyExists):
        client.create(NAMESPACES, {"metadata": {"name": LIMIT_NAMESPACE}})
    watch = JobWatch(client, LIMIT_NAMESPACE)
    watch.start()
    trace: CpuTrace | None = None
    try:
        tick = math.ceil(time.time()) + START_DELAY
        minute = int(tick) // 60
        template = log_dir / "jobcreate-template.json"
        template.write_text(json.dumps(limit_job(LIMIT_NAMESPACE, tick, job_template)))
        argv = [str(binary), "--kubeconfig", cp.kubeconfig_path, "--namespace", LIMIT_NAMESPACE,
                "--template", str(template), "--count", str(n),
                "--workers", str(args.limit_workers), "--start", f"{tick:.3f}",
                "--minute", str(minute)]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        trace = CpuTrace(plane_pids(cp) | {"client": proc.pid})
        trace.start()
        try:
            stdout, stderr = proc.communicate(timeout=START_DELAY + args.collect_timeout + 60)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        (log_dir / "jobcreate.log").write_text(stderr)
        lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
        client_view: dict[str, object] = json.loads(lines[-1]) if lines else {}
        if proc.returncode != 0 or not lines:
            raise PhaseError(f"jobcreate exited {proc.returncode}: "
                             f"{client_view.get('error') or stderr[-2000:]}")
        suffix = f"-{minute}"
        deadline = tick + args.collect_timeout
        while watch.count_suffix(suffix) < n and time.time() < deadline:
            time.sleep(0.2)
        jobs = [j for j in watch.snapshot() if j.name.endswith(suffix)]
    finally:
        if trace is not None:
            trace.stop()
        watch.close()
    series["limit"] = {"watch": [j.seen_at - tick for j in jobs],
                       "created": [j.created - tick for j in jobs]}
    result: dict[str, object] = {
        "controller": f"bench/anchors/jobcreate (client-go, {args.limit_workers} goroutines)",
        "workers": args.limit_workers,
        "namespace": LIMIT_NAMESPACE,
        "tick": datetime.fromtimestamp(tick, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        **skew_fields(jobs, tick, n, SCHEDULED_TIMESTAMP_ANNOTATION),
        "client": client_view,
        "burst": (None if trace is None
                  else burst_fields(trace, tick, [j.seen_at for j in jobs])),
        "watch_errors": len(watch.errors),
    }
    return result
