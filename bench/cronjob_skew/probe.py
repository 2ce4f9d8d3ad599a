"""Measuring instruments for ``bench.cronjob_skew``: process CPU/RSS, a Job watch, statistics.

Contract:

* :class:`ProcessSampler` reads ``/proc/<pid>/stat`` (utime+stime, all threads of the process)
  and polls ``/proc/<pid>/status`` VmRSS every ``interval`` seconds on a named thread between
  ``start()`` and ``stop()``; it also reports VmHWM (peak RSS since the process started).
  Reading a process that has exited stops the sampling quietly; figures are what was seen.
* :func:`stat_fields` reads ``/proc/<pid>/stat`` and :func:`stat_cpu_seconds` its CPU time;
  :func:`status_fields` reads ``/proc/<pid>/status`` (:func:`parse_status`: its integer
  fields, sizes in KiB); :func:`cpu_seconds` is one reading of a process's CPU time;
  :func:`cpu_busy_since` turns two readings into "cores used" to decide when a controller
  has settled after start-up. ``bench.soak`` reads processes through the same functions
  (and polls its per-minute RSS peak with a :class:`ProcessSampler`).
* :class:`JobWatch` keeps one WATCH on ``batch/v1`` Jobs in one namespace open (re-watching
  from the last resourceVersion when the server ends it) and records, per Job name, the
  wall-clock time (``time.time()``) at which this process decoded its ADDED event, plus the
  Job's creationTimestamp, annotations and owner (its controller ownerReference's name).
  ``close()`` ends it and joins the thread.
* :class:`CpuTrace` reads the CPU seconds of several named processes every ``interval``
  seconds on a thread between ``start()`` and ``stop()``; ``between(t0, t1)`` is each one's
  CPU seconds over that wall-clock span, interpolated linearly between the readings around
  each end (so the error is at most one interval's CPU per end). A process that has exited
  keeps its last reading.
* :func:`burst_fields` turns a trace into the ``burst`` result of a phase: the CPU each traced
  process used from ``T`` until the last of the phase's Jobs was seen, as seconds, as cores
  (over that span) and, for the API server, as milliseconds per Job created.
* :func:`summary` gives count/min/p50/p90/p99/max/mean with nearest-rank percentiles.
* :func:`apiserver_throttled` reads how many requests kube-apiserver answered 429 so far.

This is benchmark code: it uses real time on purpose (it measures real time).
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pyctrl.errors import ApiError
from pyctrl.kube import JOBS, RESTClient
from pyctrl.testing.envtest import ControlPlane

__all__ = [
    "CLK_TCK",
    "CpuTrace",
    "JobSeen",
    "JobWatch",
    "ProcessSampler",
    "alive",
    "burst_fields",
    "cpu_busy_since",
    "cpu_seconds",
    "parse_rfc3339",
    "parse_status",
    "percentile",
    "plane_pids",
    "stat_cpu_seconds",
    "stat_fields",
    "status_fields",
    "summary",
]

CLK_TCK = os.sysconf("SC_CLK_TCK")


def stat_fields(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` from field 3 (state) on, or None if ``pid`` is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode()
    except OSError:
        return None
    # The command name (field 2) may hold spaces; fields after the closing paren are fixed.
    return raw[raw.rindex(")") + 2 :].split()


def stat_cpu_seconds(fields: Sequence[str]) -> float:
    """utime + stime in seconds, from what :func:`stat_fields` returned."""
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of ``pid`` (all its threads) in seconds, or None if it is gone."""
    fields = stat_fields(pid)
    return None if fields is None else stat_cpu_seconds(fields)


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (exited, not yet reaped)."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def parse_status(text: str) -> dict[str, int]:
    """The integer fields of a ``/proc/PID/status`` text (``VmRSS: 123 kB`` -> 123)."""
    fields: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        parts = rest.split()
        if sep and parts and parts[0].isdigit():
            fields[key] = int(parts[0])
    return fields


def status_fields(pid: int) -> dict[str, int] | None:
    """:func:`parse_status` of ``/proc/<pid>/status``, or None if ``pid`` is gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            return parse_status(f.read().decode())
    except OSError:
        return None


def _status_kib(pid: int, key: str) -> int | None:
    fields = status_fields(pid)
    return None if fields is None else fields.get(key)


def cpu_busy_since(pid: int, since_cpu: float, since_wall: float) -> float:
    """Cores used by ``pid`` between a reading (``since_cpu`` at ``since_wall``) and now."""
    now_cpu = cpu_seconds(pid)
    elapsed = time.monotonic() - since_wall
    if now_cpu is None or elapsed <= 0:
        return 0.0
    return (now_cpu - since_cpu) / elapsed


class ProcessSampler:
    """CPU seconds and peak RSS of one process over a window (see module docstring)."""

    def __init__(self, pid: int, interval: float = 0.1) -> None:
        self.pid = pid
        self.interval = interval
        self.cpu_start: float | None = None
        self.cpu_end: float | None = None
        self.peak_rss_kib = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._result: dict[str, object] | None = None

    def start(self) -> None:
        self.cpu_start = cpu_seconds(self.pid)
        self._thread = threading.Thread(target=self._poll, name=f"sampler-{self.pid}",
                                        daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            rss = _status_kib(self.pid, "VmRSS")
            if rss is None:
                return
            self.peak_rss_kib = max(self.peak_rss_kib, rss)
            self.samples += 1
            self._stop.wait(self.interval)

    def stop(self) -> dict[str, object]:
        """End the window; return cpu_seconds, peak_rss_mib, hwm_rss_mib, samples.

        Idempotent: later calls return the figures of the first.
        """
        if self._result is not None:
            return self._result
        self.cpu_end = cpu_seconds(self.pid)
        hwm = _status_kib(self.pid, "VmHWM")
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        cpu = (None if self.cpu_start is None or self.cpu_end is None
               else round(self.cpu_end - self.cpu_start, 3))
        self._result = {
            "cpu_seconds": cpu,
            "peak_rss_mib": round(self.peak_rss_kib / 1024, 1),
            "hwm_rss_mib": None if hwm is None else round(hwm / 1024, 1),
            "rss_samples": self.samples,
        }
        return self._result


class CpuTrace:
    """CPU seconds of named processes read every ``interval`` s (see module docstring)."""

    def __init__(self, pids: dict[str, int], interval: float = 0.05) -> None:
        self.pids = dict(pids)
        self.interval = interval
        self.readings: list[tuple[float, dict[str, float]]] = []
        self._last: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _read(self) -> None:
        now = time.time()
        for name, pid in self.pids.items():
            cpu = cpu_seconds(pid)
            if cpu is not None:
                self._last[name] = cpu
        self.readings.append((now, dict(self._last)))

    def start(self) -> None:
        self._read()
        self._thread = threading.Thread(target=self._poll, name="cpu-trace", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            self._read()

    def stop(self) -> None:
        """End the trace (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            self._read()

    def _at(self, t: float, name: str) -> float | None:
        points = [(when, cpu[name]) for when, cpu in self.readings if name in cpu]
        if not points or t < points[0][0] or t > points[-1][0]:
            return None
        for (t0, c0), (t1, c1) in itertools.pairwise(points):
            if t0 <= t <= t1:
                return c0 if t1 == t0 else c0 + (c1 - c0) * (t - t0) / (t1 - t0)
        return points[-1][1]

    def between(self, t0: float, t1: float) -> dict[str, float | None]:
        """Each process's CPU seconds from ``t0`` to ``t1`` (None: not traced over the span)."""
        out: dict[str, float | None] = {}
        for name in self.pids:
            a, b = self._at(t0, name), self._at(t1, name)
            out[name] = None if a is None or b is None else round(b - a, 3)
        return out


def plane_pids(cp: ControlPlane) -> dict[str, int]:
    """The control plane's own processes to trace (none for an external cluster)."""
    pids = {"apiserver": cp.apiserver_pid, "etcd": cp.etcd_pid}
    return {name: pid for name, pid in pids.items() if pid is not None}


def burst_fields(trace: CpuTrace, tick: float, seen_at: Sequence[float]) -> dict[str, object]:
    """CPU from ``tick`` to the last ``seen_at`` per traced process (see module docstring)."""
    if not seen_at:
        return {"seconds": None}
    span = max(seen_at) - tick
    cpu = trace.between(tick, tick + span)
    cores = {name: None if v is None or span <= 0 else round(v / span, 3)
             for name, v in cpu.items()}
    known = [v for v in cores.values() if v is not None]
    per_job = cpu.get("apiserver")
    return {
        "seconds": round(span, 3), "cpu_seconds": cpu, "cores": cores,
        "cores_total": round(sum(known), 3) if known else None,
        "apiserver_cpu_ms_per_job": (None if per_job is None
                                     else round(per_job * 1000 / len(seen_at), 3)),
    }


@dataclass(frozen=True)
class JobSeen:
    """One Job as first seen by the watch."""

    name: str
    seen_at: float  # time.time() when the ADDED event was decoded here
    created: float  # metadata.creationTimestamp as a unix time (1 s resolution)
    annotations: dict[str, str] = field(default_factory=dict)
    owner: str = ""  # the name in the controller ownerReference ("" when there is none)


def parse_rfc3339(text: str) -> float:
    """Unix time of an API server timestamp such as ``2024-01-02T03:04:05Z``."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class JobWatch:
    """Record every Job ADDED in ``namespace`` (see module docstring)."""

    def __init__(self, client: RESTClient, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.seen: dict[str, JobSeen] = {}
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._stream: object = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"jobwatch-{namespace}",
                                        daemon=True)

    def start(self, timeout: float = 30.0) -> None:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError(f"the Job watch in {self.namespace} did not open")

    def _run(self) -> None:
        rv: str | None = None
        while not self._stop.is_set():
            try:
                if rv is None:
                    listed = self.client.list(JOBS, self.namespace)
                    rv = str(listed["metadata"]["resourceVersion"])
                    now = time.time()
                    for item in listed.get("items") or []:
                        self._record(item, now)
                stream = self.client.watch(JOBS, self.namespace, resource_version=rv,
                                           timeout_seconds=300)
                self._stream = stream
                self._ready.set()
                if self._stop.is_set():  # close() ran before the stream was published
                    stream.close()
                for event in stream:
                    now = time.time()
                    obj = event["object"]
                    if event["type"] == "ERROR":
                        rv = None  # 410 Gone and friends: list again
                        break
                    rv = str(obj["metadata"]["resourceVersion"])
                    if event["type"] == "ADDED":
                        self._record(obj, now)
            except ApiError as err:
                if self._stop.is_set():
                    return
                self.errors.append(str(err))
                self._stop.wait(0.5)
                rv = None

    def _record(self, obj: dict[str, object], now: float) -> None:
        meta = obj["metadata"]
        assert isinstance(meta, dict)
        name = str(meta["name"])
        with self._lock:
            if name not in self.seen:
                self.seen[name] = JobSeen(
                    name=name, seen_at=now,
                    created=parse_rfc3339(str(meta["creationTimestamp"])),
                    annotations=dict(meta.get("annotations") or {}),
                    owner=_controller_owner(meta),
                )

    def snapshot(self) -> list[JobSeen]:
        with self._lock:
            return list(self.seen.values())

    def count_suffix(self, suffix: str) -> int:
        with self._lock:
            return sum(1 for name in self.seen if name.endswith(suffix))

    def close(self) -> None:
        self._stop.set()
        stream = self._stream
        close = getattr(stream, "close", None)
        if close is not None:
            close()
        self._thread.join(10.0)


def _controller_owner(meta: dict[str, object]) -> str:
    refs = meta.get("ownerReferences")
    for ref in refs if isinstance(refs, list) else []:
        if isinstance(ref, dict) and ref.get("controller"):
            return str(ref.get("name") or "")
    return ""


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an ascending, non-empty sequence."""
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def summary(values: Sequence[float]) -> dict[str, float | int | None]:
    """count, min, p50, p90, p99, max, mean (seconds, rounded to ms); None when empty."""
    data = sorted(values)
    if not data:
        return {"count": 0, "min": None, "p50": None, "p90": None, "p99": None, "max": None,
                "mean": None}
    return {
        "count": len(data),
        "min": round(data[0], 3),
        "p50": round(percentile(data, 50), 3),
        "p90": round(percentile(data, 90), 3),
        "p99": round(percentile(data, 99), 3),
        "max": round(data[-1], 3),
        "mean": round(sum(data) / len(data), 3),
    }


def apiserver_throttled(cp: ControlPlane) -> int | None:
    """How many requests kube-apiserver has answered 429 since it started (the sum of
    ``apiserver_request_total{code="429"}``; APF and max-in-flight rejections both count);
    None when its /metrics can not be read."""
    try:
        status, body = cp.http.request("GET", "/metrics", timeout=10.0)
    except (OSError, RuntimeError):
        return None
    if status != 200 or not isinstance(body, str):
        return None
    total = 0.0
    for line in body.splitlines():
        if line.startswith("apiserver_request_total{") and 'code="429"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return int(total)

