"""The processes under test in ``bench.cronjob_skew``, and how to tell they have settled.

Contract:

* :class:`Controller` starts either ``python -m cronjob_controller`` (every phase but
  ``upstream``: a subprocess in its own session that dies with us, log ``log_name`` in
  ``log_dir``, ``extra_args`` appended to its flags and ``extra_env`` to its environment
  (:func:`python_env`), as for one replica of the sharded phase; ``prefix`` runs it under
  another command, e.g. ``py-spy record ... --``) or the ControlPlane's
  kube-controller-manager with only the ``cronjob`` controller (``extra_args`` appended to
  its flags); ``check()`` raises :class:`PhaseError` with the log tail
  once the process has exited; ``stop()`` sends SIGTERM, waits (SIGKILL after 30 s) and
  returns the path of the kept log (KCM's is copied into ``log_dir``).
* Bytecode: before its first ``python -m cronjob_controller`` the bench compiles the repo's
  packages (:func:`ensure_bytecode`, ``compileall`` into ``__pycache__``), as the container
  image does at build (Dockerfile: ``compileall``). Without it, under
  ``PYTHONDONTWRITEBYTECODE=1`` (set on some machines, and in the image), every start
  compiled ~150 modules from source, which is not what a deployed controller pays.
* ``cache_sync_seconds()``: process start to caches synced (see :mod:`bench.cronjob_skew.sync`):
  pyctrl's from its ``/readyz`` (probes on a free loopback port, polled from spawn), KCM's
  from its log (the part written since this start: the KCM's log file is appended to by
  every start); None when unknown. ``first_reconcile_seconds()``: process start to the first
  reconcile finished (see :mod:`bench.cronjob_skew.sync`; the KCM's needs the
  ``--vmodule=cronjob_controllerv2=4`` extra arg).
* ``gc_pauses()`` (pyctrl only; None for KCM or when unreadable): the controller's
  ``python_gc_duration_seconds`` histogram (:mod:`pyctrl.serving.gcmetrics`) read from its
  ``/metrics``, served in plain HTTP on a free loopback port, as
  ``{generation: {"count", "sum", "buckets": {le: cumulative count}}}``; :func:`gc_delta`
  is the difference of two readings (the pauses in between) with, per generation,
  ``max_le``: the smallest bucket bound holding every pause, an upper bound of the longest.
* :func:`add_controller_arguments` adds the flags :class:`Controller`, :func:`wait_settled` and
  ``create_cronjobs`` read, for the benches that start these processes.
* :func:`wait_settled` returns once ``warmup`` seconds have passed since start and the process
  (each of the processes, when given several pids: the replicas of the sharded phase) used
  fewer than ``settle_cores`` cores over the last 3 s, or after ``settle_timeout``.

Real time on purpose: these are real processes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import socket
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.cronjob_skew.probe import alive, cpu_seconds
from bench.cronjob_skew.sync import (
    KCM_SYNC_DONE,
    ReadyzPoller,
    cache_sync_seconds,
    first_reconcile_timestamp,
    klog_cache_synced,
    klog_first,
    process_start,
    wall_to_boottime,
)
from pyctrl.testing.envtest import ControlPlane
from pyctrl.testing.envtest.process import Proc, spawn

__all__ = ["REPO", "Controller", "GCHistogram", "PhaseError", "add_controller_arguments",
           "busiest_cores", "gc_delta", "parse_gc_histogram", "python_env", "wait_settled"]

REPO = Path(__file__).resolve().parent.parent.parent

GCHistogram = dict[str, dict[str, Any]]
_GC_SAMPLE = re.compile(
    r'^python_gc_duration_seconds_(bucket|count|sum)\{([^}]*)\} ([0-9.eE+-]+|[+-]Inf|NaN)$')
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def parse_gc_histogram(text: str) -> GCHistogram:
    """``python_gc_duration_seconds`` of a Prometheus text exposition, per generation."""
    out: GCHistogram = {}
    for line in text.splitlines():
        m = _GC_SAMPLE.match(line)
        if m is None:
            continue
        kind, labels, value = m.group(1), dict(_LABEL.findall(m.group(2))), float(m.group(3))
        gen = out.setdefault(labels.get("generation", "?"),
                             {"count": 0.0, "sum": 0.0, "buckets": {}})
        if kind == "bucket":
            gen["buckets"][labels.get("le", "+Inf")] = value
        else:
            gen[kind] = value
    return out


def gc_delta(before: GCHistogram | None, after: GCHistogram | None) -> GCHistogram | None:
    """The pauses between two readings, with ``max_le`` per generation (module docstring)."""
    if before is None or after is None:
        return None
    out: GCHistogram = {}
    for gen, now in sorted(after.items()):
        then = before.get(gen, {"count": 0.0, "sum": 0.0, "buckets": {}})
        buckets = {le: now["buckets"][le] - then["buckets"].get(le, 0.0)
                   for le in now["buckets"]}
        count = now["count"] - then["count"]
        bounds = sorted((float(le), le) for le in buckets)
        max_le = next((le for bound, le in bounds if buckets[le] >= count), None)
        out[gen] = {"count": int(count), "sum_ms": round((now["sum"] - then["sum"]) * 1e3, 2),
                    "max_le": None if count == 0 else max_le,
                    "buckets": {le: int(v) for le, v in buckets.items()}}
    return out


_COMPILED: list[bool] = []


def ensure_bytecode() -> None:
    """Compile ``pyctrl`` and ``cronjob_controller`` once per bench process (see module
    docstring); a failure only costs the start time it would have saved."""
    if _COMPILED:
        return
    _COMPILED.append(True)
    import compileall

    for package in ("pyctrl", "cronjob_controller"):
        compileall.compile_dir(str(REPO / package), quiet=1)


def python_env(extra_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a ``python -m cronjob_controller`` child: ours, ``extra_env``, and
    the repo first on ``PYTHONPATH``."""
    env = dict(os.environ) | dict(extra_env or {})
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def add_controller_arguments(parser: argparse.ArgumentParser, *,
                             settle_timeout: float) -> None:
    """The flags of the controllers under test (see module docstring)."""
    parser.add_argument("--pyctrl-workers", type=int, default=16,
                        help="cronjob_controller --workers")
    parser.add_argument("--pyctrl-arg", action="append", default=[], metavar="ARG",
                        help="one more cronjob_controller flag (repeatable), e.g. "
                             "--pyctrl-arg=--gc-freeze=false")
    parser.add_argument("--pyctrl-default-limits", action="store_true",
                        help="pyctrl runs without --qps/--burst, i.e. with "
                             "cronjob_controller's own default client-side rate limit "
                             "(--qps still applies to upstream)")
    parser.add_argument("--upstream-syncs", type=int, default=50,
                        help="kube-controller-manager --concurrent-cron-job-syncs")
    parser.add_argument("--qps", type=int, default=2000, help="controllers' client QPS/burst")
    parser.add_argument("--create-threads", type=int, default=32,
                        help="threads creating the CronJobs and their history Jobs")
    parser.add_argument("--settle-cores", type=float, default=0.10,
                        help="settled when the controller uses fewer cores than this (3 s)")
    parser.add_argument("--settle-timeout", type=float, default=settle_timeout,
                        help="stop waiting for the controller to settle after this many "
                             "seconds (default %(default)s)")


class PhaseError(RuntimeError):
    """A phase could not be measured (reported in its result, the other phase still runs)."""

class Controller:
    """The process under test: start, pid, alive check, stop."""

    def __init__(self, phase: str, cp: ControlPlane, args: argparse.Namespace,
                 log_dir: Path, *, extra_args: Sequence[str] = (),
                 extra_env: Mapping[str, str] | None = None,
                 log_name: str = "cronjob_controller.log",
                 prefix: Sequence[str] = ()) -> None:
        self.phase, self.cp, self.args, self.log_dir = phase, cp, args, log_dir
        self.python = phase != "upstream"  # python -m cronjob_controller, else KCM
        self.extra_args, self.extra_env = list(extra_args), dict(extra_env or {})
        self.log_name, self.prefix = log_name, list(prefix)
        self._log_offset = 0  # where this start's part of the (appended) log begins
        self.proc: Proc | None = None
        self.exit_code: int | None = None
        self.pid: int | None = None
        self.readyz: ReadyzPoller | None = None
        self.metrics_port: int | None = None

    @property
    def log_path(self) -> Path:
        if self.python:
            return self.log_dir / self.log_name
        return self.cp.directory / "kube-controller-manager.log"

    def start(self) -> int:
        try:
            self._log_offset = self.log_path.stat().st_size
        except OSError:
            self._log_offset = 0
        if self.python:
            ensure_bytecode()
            port = _free_port()
            self.metrics_port = _free_port()
            argv = [*self.prefix, sys.executable, "-m", "cronjob_controller",
                    "--kubeconfig", self.cp.kubeconfig_path,
                    "--workers", str(self.args.pyctrl_workers),
                    *([] if getattr(self.args, "pyctrl_default_limits", False)
                      else ["--qps", str(self.args.qps), "--burst", str(self.args.qps)]),
                    "--log-level", "warning",
                    "--metrics-bind-address", f"127.0.0.1:{self.metrics_port}",
                    "--metrics-secure=false",
                    "--health-probe-bind-address", f"127.0.0.1:{port}",
                    *getattr(self.args, "pyctrl_arg", []), *self.extra_args]
            self.proc = spawn(self.log_path.stem, argv, self.log_path,
                              env=python_env(self.extra_env))
            self.readyz = ReadyzPoller(port).start()
            self.pid = self.proc.pid
            return self.proc.pid
        self.cp.start_controller_manager(controllers=["cronjob"], extra_args=[
            f"--concurrent-cron-job-syncs={self.args.upstream_syncs}",
            f"--kube-api-qps={self.args.qps}", f"--kube-api-burst={self.args.qps}",
            *self.extra_args,
        ])
        pid = self.cp.controller_manager_pid
        if pid is None:
            raise PhaseError("kube-controller-manager did not start")
        self.pid = pid
        return pid

    def cache_sync_seconds(self, timeout: float = 5.0) -> float | None:
        """Process start to caches synced (call once the controller has settled)."""
        if self.pid is None:
            return None
        started = process_start(self.pid)
        if self.readyz is not None:
            return cache_sync_seconds(started, self.readyz.wait(timeout))
        text = self.log_text()
        wall = None if text is None else klog_cache_synced(text)
        return cache_sync_seconds(started, None if wall is None else wall_to_boottime(wall))

    def first_reconcile_seconds(self) -> float | None:
        """Process start to the first reconcile finished (see module docstring)."""
        if self.pid is None:
            return None
        if self.python:
            text = self.metrics_text()
            wall = None if text is None else first_reconcile_timestamp(text)
        else:
            text = self.log_text()
            wall = None if text is None else klog_first(text, KCM_SYNC_DONE)
        return cache_sync_seconds(process_start(self.pid),
                                  None if wall is None else wall_to_boottime(wall))

    def log_text(self) -> str | None:
        """What the process logged since this start; None if unreadable."""
        try:
            with self.log_path.open("rb") as f:
                f.seek(self._log_offset)
                return f.read().decode(errors="replace")
        except OSError:
            return None

    def metrics_text(self, timeout: float = 5.0) -> str | None:
        """pyctrl's ``/metrics`` now; None for KCM or when unreadable."""
        if self.metrics_port is None:
            return None
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as answer:
                text: str = answer.read().decode()
        except (OSError, ValueError):
            return None
        return text

    def gc_pauses(self, timeout: float = 5.0) -> GCHistogram | None:
        """The controller's GC pause histogram now (see module docstring)."""
        text = self.metrics_text(timeout)
        return None if text is None else parse_gc_histogram(text)

    def check(self) -> None:
        """Raise PhaseError with the log tail if the controller exited."""
        pid = self.proc.pid if self.proc is not None else self.cp.controller_manager_pid
        if pid is None or not alive(pid):
            raise PhaseError(f"{self.phase} controller exited early; log tail:\n{self.tail()}")

    def tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> Path:
        """Stop the process; return where its log is kept (KCM's is copied out of the
        control plane's temp dir, which is deleted with it)."""
        if self.readyz is not None:
            self.readyz.stop()
        if self.python:
            if self.proc is not None:
                self.proc.stop(timeout=30.0)
                self.exit_code = self.proc.popen.returncode
            return self.log_path
        self.cp.stop_controller_manager()
        kept = self.log_dir / "kube-controller-manager.log"
        with contextlib.suppress(OSError):
            shutil.copyfile(self.log_path, kept)
        return kept


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def busiest_cores(first: Sequence[float], last: Sequence[float], seconds: float) -> float:
    """The most cores any one process used between two readings of all (CPU seconds each)."""
    if seconds <= 0:
        return float("inf")
    return max((b - a) / seconds for a, b in zip(first, last, strict=True))


def wait_settled(pids: int | Sequence[int], started: float, args: argparse.Namespace,
                 check: Callable[[], None], timeout: float | None = None) -> tuple[bool, float]:
    """Wait >= warmup s after start and until each process's CPU < settle-cores over 3 s, or
    ``timeout`` (default ``--settle-timeout``) s after start; (settled, at)."""
    limit = args.settle_timeout if timeout is None else timeout
    group = [pids] if isinstance(pids, int) else list(pids)
    readings: list[tuple[float, list[float]]] = []  # (monotonic, cpu seconds), one per second
    while True:
        check()
        now = time.monotonic()
        cpus = [cpu_seconds(pid) for pid in group]
        known = [c for c in cpus if c is not None]
        if len(known) < len(cpus):
            check()
            raise PhaseError("a controller process disappeared")
        readings.append((now, known))
        readings = readings[-4:]
        if now - started >= args.warmup and len(readings) == 4:
            (t0, c0), (t1, c1) = readings[0], readings[-1]
            if busiest_cores(c0, c1, t1 - t0) < args.settle_cores:
                return True, now - started
        if now - started >= limit:
            return False, now - started
        time.sleep(1.0)
