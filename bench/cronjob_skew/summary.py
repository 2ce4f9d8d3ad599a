"""One Markdown table row per ``cronjob-skew`` run: what ``bench/README.md`` keeps in git.

The raw JSON, PNG and profiles of a run stay in the git-ignored ``bench/results/``; the
figures worth keeping go into ``bench/README.md`` as one row of :data:`HEADER` per run, with
the command that produced them. A run prints its row at the end (and writes it next to its
JSON as ``cronjob-skew-<stamp>.md``); ``python -m bench.cronjob_skew.summary FILE.json ...``
prints the table for older runs (their command reconstructed from the JSON when it predates
the ``command`` field).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["HEADER", "command_of", "row", "table"]

HEADER = ("| run (UTC) | command | pyctrl p50 / p99 / max s | upstream p99 s | limit p99 s "
          "| p99 vs upstream | p99 vs limit | CPU vs upstream | RSS vs upstream "
          "| cache sync s | sharded: busiest CPU vs single |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|")


def _num(value: object, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "-"


def command_of(result: Mapping[str, Any], profiled: bool = False) -> str:
    """The run's command: recorded, else rebuilt from what the JSON shows (marked ``~``)."""
    if isinstance(result.get("command"), str):
        return str(result["command"])
    parts = ["python -m bench cronjob-skew", f"--cronjobs {result.get('cronjobs')}"]
    phases = [p for p in ("pyctrl", "upstream", "limit", "pyctrl-sharded")
              if isinstance(result.get(p), dict)]
    sharded = result.get("pyctrl-sharded")
    if isinstance(sharded, dict):
        parts.append(f"--shards {result.get('shards') or sharded.get('shards')}")
    elif len(phases) == 1:
        parts.append(f"--only {phases[0]}")
    workers = (result.get("pyctrl") or {}).get("workers")
    if isinstance(workers, int) and workers != 16:
        parts.append(f"--pyctrl-workers {workers}")
    if profiled:
        parts.append("--profile")
    return "~ " + " ".join(parts)


def row(result: Mapping[str, Any], stamp: str, profiled: bool = False) -> str:
    """One table row (see :data:`HEADER`) for a run's result."""
    py: Mapping[str, Any] = result.get("pyctrl") or {}
    up: Mapping[str, Any] = result.get("upstream") or {}
    lim: Mapping[str, Any] = result.get("limit") or {}
    ratio: Mapping[str, Any] = result.get("ratio") or {}
    cells = [
        stamp, f"`{command_of(result, profiled)}`",
        " / ".join(_num(py.get(k)) for k in ("p50", "p99", "max")) if py else "-",
        _num(up.get("p99")), _num(lim.get("p99")),
        _num(ratio.get("p99")), _num(ratio.get("p99_vs_limit")), _num(ratio.get("cpu")),
        _num(ratio.get("rss")), _num(py.get("cache_sync_seconds")),
        _num(ratio.get("shard_cpu_max_vs_single")),
    ]
    return "| " + " | ".join(cells) + " |"


def table(paths: Sequence[Path]) -> str:
    """The header and one row per ``cronjob-skew-<stamp>.json`` in ``paths``."""
    rows = [HEADER]
    for path in sorted(paths):
        stamp = path.stem.removeprefix("cronjob-skew-")
        profiled = path.with_name(f"{path.stem}-profile.txt").exists()
        result = json.loads(path.read_text())
        if isinstance(result, dict):  # not a run's sidecar file (e.g. GC samples)
            rows.append(row(result, stamp, profiled))
    return "\n".join(rows)


if __name__ == "__main__":
    print(table([Path(p) for p in sys.argv[1:]]))
