"""``--profile`` of ``bench.cronjob_skew``: where pyctrl's CPU goes during the measured tick.

Contract:

* :func:`start_profiler` attaches py-spy (a sampling profiler, ``pip install py-spy``; it reads
  the target's memory from outside, so every thread is sampled and the controller runs
  unmodified) to the controller for ``duration`` seconds (the CPU window T-5 s .. T+60 s) at
  ``rate`` Hz in ``--nonblocking`` mode (the target is never paused, so the skew is not
  perturbed by the sampling itself; the profiler's own CPU is its process's, not the
  controller's), aggregating by function, writing collapsed stacks to ``raw``. With ``gil``
  (the default) only the thread holding the GIL is sampled: the samples are where the
  controller's Python CPU goes, the one core its threads share; time in C code that releases
  the GIL (TLS, socket syscalls) is not in them. Without it, every thread py-spy does not
  judge idle is sampled, which at a tick counts threads blocked in ``SSLSocket.read`` or on a
  lock as busy (a wall-clock view of where the workers wait). It raises :class:`PhaseError`
  when py-spy is not installed.
* :func:`finish_profiler` waits for it and writes ``table``: the top ``top`` functions by
  total (cumulative: samples with the function anywhere on the stack, counted once per stack)
  and by self (tottime: samples with the function on top). It returns the table's summary for
  the JSON (the py-spy flags, samples, the paths, the top 5 by self).
* :func:`parse_collapsed` and :func:`top_table` are the pure parts.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bench.cronjob_skew.controllers import PhaseError

__all__ = ["Profile", "finish_profiler", "parse_collapsed", "profiler_flags", "py_spy",
           "start_profiler", "top_table"]


@dataclass(frozen=True)
class Profile:
    """Sample counts per function (a frame label such as ``sync (controller.py:120)``)."""

    samples: int
    self_counts: Counter[str]
    total_counts: Counter[str]


def parse_collapsed(lines: Iterable[str]) -> Profile:
    """Read ``frame;frame;...;frame count`` lines (root first, leaf last)."""
    samples = 0
    self_counts: Counter[str] = Counter()
    total_counts: Counter[str] = Counter()
    for line in lines:
        stack, _, count_text = line.rstrip("\n").rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        samples += count
        self_counts[frames[-1]] += count
        for frame in set(frames):
            total_counts[frame] += count
    return Profile(samples, self_counts, total_counts)


def top_table(profile: Profile, top: int = 40, title: str = "") -> str:
    """Two fixed-width tables: top ``top`` by total (cumulative) and by self (tottime)."""
    n = max(profile.samples, 1)
    out = [title, f"samples: {profile.samples}", ""] if title else [
        f"samples: {profile.samples}", ""]
    for heading, counts in (("by total (cumulative)", profile.total_counts),
                            ("by self (tottime)", profile.self_counts)):
        out.append(f"top {top} {heading}")
        out.append(f"{'self':>7} {'self%':>6} {'total':>7} {'total%':>6}  function")
        for frame, _ in counts.most_common(top):
            s, t = profile.self_counts[frame], profile.total_counts[frame]
            out.append(f"{s:>7} {100 * s / n:>6.1f} {t:>7} {100 * t / n:>6.1f}  {frame}")
        out.append("")
    return "\n".join(out)


def py_spy() -> str | None:
    """The py-spy executable: beside this Python (the venv's), else on PATH; None if absent."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def profiler_flags(gil: bool = True) -> list[str]:
    """py-spy record's sampling flags (see the module docstring)."""
    return ["--function", "--nonblocking", *(["--gil"] if gil else [])]


def start_profiler(pid: int, duration: float, raw: Path, rate: int = 100,
                   gil: bool = True) -> subprocess.Popen[str]:
    """Attach py-spy to ``pid`` for ``duration`` seconds (see the module docstring)."""
    exe = py_spy()
    if exe is None:
        raise PhaseError("--profile needs py-spy: pip install py-spy")
    argv = [exe, "record", "--pid", str(pid), "--duration", str(max(1, round(duration))),
            "--rate", str(rate), "--format", "raw", *profiler_flags(gil), "--output", str(raw)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish_profiler(proc: subprocess.Popen[str], raw: Path, table: Path, title: str,
                    top: int = 40, gil: bool = True) -> dict[str, object]:
    """Wait for py-spy, write the top table; a summary for the JSON."""
    try:
        output, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
    if not raw.exists():
        return {"error": f"py-spy exited {proc.returncode}: {output[-1000:]}"}
    profile = parse_collapsed(raw.read_text().splitlines())
    table.write_text(top_table(profile, top, title) + "\n")
    n = max(profile.samples, 1)
    return {
        "tool": " ".join(["py-spy record", *profiler_flags(gil)]), "samples": profile.samples,
        "table": str(table), "raw": str(raw),
        "top_self": [{"function": f, "percent": round(100 * c / n, 1)}
                     for f, c in profile.self_counts.most_common(5)],
    }
