"""bench/README.md's rows: one per cronjob-skew run, with its command (recorded or rebuilt)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.cronjob_skew.summary import HEADER, command_of, row, table


def test_row_has_the_figures_and_the_recorded_command() -> None:
    result = {"cronjobs": 2000, "command": "python -m bench cronjob-skew --cronjobs 2000",
              "pyctrl": {"p50": 1.1, "p99": 2.2, "max": 2.3, "cache_sync_seconds": 0.7},
              "upstream": {"p99": 5.0}, "limit": {"p99": 2.0},
              "ratio": {"p99": 0.44, "p99_vs_limit": 1.1, "cpu": 0.65, "rss": 0.7}}
    line = row(result, "20261126T000000Z")
    assert line.count("|") == HEADER.splitlines()[0].count("|")
    assert "`python -m bench cronjob-skew --cronjobs 2000`" in line
    assert "1.10 / 2.20 / 2.30 | 5.00 | 2.00 | 0.44 | 1.10 | 0.65 | 0.70 | 0.70 | - |" in line


def test_commands_of_older_runs_are_rebuilt_and_marked(tmp_path: Path) -> None:
    assert command_of({"cronjobs": 6000, "pyctrl": {}, "pyctrl-sharded": {"shards": 3}}) == (
        "~ python -m bench cronjob-skew --cronjobs 6000 --shards 3")
    assert command_of({"cronjobs": 10, "pyctrl": {"workers": 32}}, profiled=True) == (
        "~ python -m bench cronjob-skew --cronjobs 10 --only pyctrl --pyctrl-workers 32 "
        "--profile")
    (tmp_path / "cronjob-skew-1Z.json").write_text(json.dumps({"cronjobs": 1, "pyctrl": {}}))
    (tmp_path / "cronjob-skew-1Z-gc.json").write_text("[]")  # a sidecar, skipped
    (tmp_path / "cronjob-skew-1Z-profile.txt").write_text("")
    out = table(sorted(tmp_path.glob("cronjob-skew-*.json")))
    assert out.splitlines()[2].startswith("| 1Z | `~ python -m bench cronjob-skew --cronjobs 1 "
                                          "--only pyctrl --profile`")
    assert len(out.splitlines()) == 3
