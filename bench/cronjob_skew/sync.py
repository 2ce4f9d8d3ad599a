"""Start-to-caches-synced time of the controllers in ``bench.cronjob_skew``.

Contract:

* Times are seconds on ``CLOCK_BOOTTIME``, the clock of ``/proc/<pid>/stat``'s start time, so
  ``cache_sync_seconds`` = (caches synced) - (the process started) with ~10 ms resolution.
* pyctrl: :class:`ReadyzPoller` polls the controller's ``/readyz`` (its ``informers-synced``
  check turns 200 once every informer's initial LIST is in the cache) every ``interval``
  seconds on a named thread from just after spawn; ``synced_at`` is the first 200 seen.
* kube-controller-manager: :func:`klog_cache_synced` finds the cronjob controller's
  ``"Caches are synced"`` line (after ``Starting cronjob controller``) in its klog output and
  returns that line's wall-clock time (klog prints local time without a year: this year is
  assumed); :func:`wall_to_boottime` maps it onto the boot clock.
* :func:`cache_sync_seconds` is None when either end is unknown.
* First reconcile (``python -m bench startup``): pyctrl's from its
  ``pyctrl_controller_first_reconcile_timestamp_seconds`` gauge on ``/metrics`` (unix time,
  :func:`first_reconcile_timestamp`; read once after the fact, so polling does not perturb
  the start); kube-controller-manager's from the first ``"Re-queuing cronjob"`` klog line, the
  last line of every sync of a CronJob with a valid schedule, printed at verbosity 4 of
  ``cronjob_controllerv2.go`` (the KCM runs with ``--vmodule=cronjob_controllerv2=4``:
  only that file logs more), :func:`klog_first`.
* :func:`klog_populated`: when the KCM's reflectors of all the given types had stored their
  initial list (their ``"Caches populated" type="*v1.Job"`` lines, ``reflector.go`` at
  verbosity 4). In v1.35 the ``"Caches are synced"`` lines do not name their controller and
  ``WaitForCacheSync`` polls every 100 ms, so this is the sharper KCM signal.
"""

from __future__ import annotations

import http.client
import re
import threading
import time
from collections.abc import Sequence
from datetime import datetime

from bench.cronjob_skew.probe import CLK_TCK, stat_fields

__all__ = [
    "KCM_SYNC_DONE",
    "ReadyzPoller",
    "boottime",
    "cache_sync_seconds",
    "first_reconcile_timestamp",
    "klog_cache_synced",
    "klog_first",
    "klog_populated",
    "process_start",
    "wall_to_boottime",
]

_KLOG = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6})\s")
_FIRST_RECONCILE = re.compile(
    r'^pyctrl_controller_first_reconcile_timestamp_seconds\{[^}]*\} ([0-9.eE+-]+)$', re.M)
KCM_SYNC_DONE = "Re-queuing cronjob"  # cronjob_controllerv2.go, V(4), end of a sync


def boottime() -> float:
    """Now on CLOCK_BOOTTIME."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def process_start(pid: int) -> float | None:
    """When ``pid`` started, on CLOCK_BOOTTIME; None if it is gone."""
    fields = stat_fields(pid)  # from field 3 on: starttime (field 22) is at index 19
    return None if fields is None else int(fields[19]) / CLK_TCK


def wall_to_boottime(wall: float) -> float:
    """A ``time.time()`` value on CLOCK_BOOTTIME (both clocks read now)."""
    return wall - (time.time() - boottime())


def cache_sync_seconds(started: float | None, synced: float | None) -> float | None:
    if started is None or synced is None:
        return None
    return round(synced - started, 3)


def klog_cache_synced(text: str, year: int | None = None) -> float | None:
    """Wall time (local clock) of the cronjob controller's "Caches are synced" klog line."""
    year = datetime.now().year if year is None else year
    seen_start = False
    for line in text.splitlines():
        if "Starting cronjob controller" in line:
            seen_start = True
            continue
        if "Caches are synced" not in line or not (seen_start or "cronjob" in line):
            continue
        wall = _klog_wall(line, year)
        if wall is not None:
            return wall
    return None


def klog_first(text: str, marker: str, year: int | None = None) -> float | None:
    """Wall time (local clock) of the first klog line containing ``marker``."""
    year = datetime.now().year if year is None else year
    for line in text.splitlines():
        if marker in line and (wall := _klog_wall(line, year)) is not None:
            return wall
    return None


def klog_populated(text: str, types: Sequence[str], year: int | None = None) -> float | None:
    """Wall time (local clock) by which every one of ``types`` (e.g. ``*v1.Job``) had its
    first ``"Caches populated"`` klog line; None if one has none."""
    walls = [klog_first(text, f'"Caches populated" type="{t}"', year) for t in types]
    known = [w for w in walls if w is not None]
    return max(known) if known and len(known) == len(walls) else None


def _klog_wall(line: str, year: int) -> float | None:
    match = _KLOG.match(line)
    if match is None:
        return None
    month, day, hh, mm, ss, micros = (int(g) for g in match.groups())
    return datetime(year, month, day, hh, mm, ss, micros).timestamp()


def first_reconcile_timestamp(metrics: str) -> float | None:
    """pyctrl's first-reconcile unix time from a ``/metrics`` text (the earliest controller's);
    None before any reconcile finished or without the gauge."""
    stamps = [float(v) for v in _FIRST_RECONCILE.findall(metrics)]
    stamps = [s for s in stamps if s > 0]
    return min(stamps) if stamps else None


class ReadyzPoller:
    """First time ``GET /readyz`` on ``127.0.0.1:port`` answered 200 (see module docstring)."""

    def __init__(self, port: int, interval: float = 0.02) -> None:
        self.port = port
        self.interval = interval
        self.synced_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"readyz-{port}", daemon=True)

    def start(self) -> ReadyzPoller:
        self._thread.start()
        return self

    def _ready(self) -> bool:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1.0)
        try:
            conn.request("GET", "/readyz")
            return conn.getresponse().status == 200
        except OSError:
            return False
        finally:
            conn.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._ready():
                self.synced_at = boottime()
                return
            self._stop.wait(self.interval)

    def wait(self, timeout: float) -> float | None:
        """Wait up to ``timeout`` s for the first 200; return ``synced_at``."""
        self._thread.join(timeout)
        return self.synced_at

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5.0)
