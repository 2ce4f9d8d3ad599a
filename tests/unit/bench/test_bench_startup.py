"""The pure parts of ``python -m bench startup`` and of the start-up signals it reads.

The bench itself needs a control plane and real processes; these pin down how it parses
``-X importtime``, the KCM's klog lines and pyctrl's first-reconcile gauge, and how it
summarises rounds.
"""

from __future__ import annotations

import argparse
from datetime import datetime

import pytest

from bench.__main__ import SUBCOMMANDS
from bench.cronjob_skew.sync import (
    KCM_SYNC_DONE,
    first_reconcile_timestamp,
    klog_cache_synced,
    klog_first,
    klog_populated,
)
from bench.startup import (
    ImportLine,
    add_arguments,
    import_summary,
    one_year_schedule_tick,
    parse_importtime,
    ratios,
    round_order,
    stats,
)

IMPORTTIME = """\
import time: self [us] | cumulative | imported package
import time:      1200 |       1200 |   _io
import time:       300 |       1500 | site
import time:      1000 |       1000 |       pyctrl.duration
import time:      2000 |       3000 |     pyctrl
import time:       500 |       3500 |   cronjob_controller.api
import time:       100 |       3600 | cronjob_controller
import time:      4000 |       4000 |   structlog
import time:       400 |       4400 | cronjob_controller.__main__
Traceback-free noise line
"""


def test_parse_importtime_reads_times_and_depth() -> None:
    lines = parse_importtime(IMPORTTIME)
    assert len(lines) == 8
    assert lines[0] == ImportLine("_io", 1200, 1200, 1)
    assert lines[2] == ImportLine("pyctrl.duration", 1000, 1000, 3)
    assert lines[-1] == ImportLine("cronjob_controller.__main__", 400, 4400, 0)


def test_import_summary_splits_ours_from_the_interpreters() -> None:
    summary = import_summary(parse_importtime(IMPORTTIME), top=3)
    # ours: the top-level cronjob_controller lines' cumulative times (3600 + 4400 us)
    assert summary.import_seconds == pytest.approx(0.008)
    # the rest: every line's self time minus ours (9500 - 8000 us): _io and site
    assert summary.interpreter_seconds == pytest.approx(0.0015)
    assert summary.modules == 8
    assert [r["module"] for r in summary.top_cumulative] == [
        "cronjob_controller.__main__", "structlog", "cronjob_controller"]
    assert [r["module"] for r in summary.top_self] == ["structlog", "pyctrl", "_io"]
    assert summary.top_cumulative[0] == {"module": "cronjob_controller.__main__", "depth": 0,
                                         "cumulative_ms": 4.4, "self_ms": 0.4}


def test_stats_best_median_spread_and_missing() -> None:
    assert stats([0.5, None, 0.3, 0.4]) == {"n": 3, "best": 0.3, "median": 0.4, "max": 0.5,
                                            "spread": 0.2, "missing": 1}
    assert stats([None]) == {"n": 0, "missing": 1}


def test_ratios_are_within_one_round_and_none_when_a_side_is_unknown() -> None:
    assert ratios({"a": 0.6, "b": 0.5, "c": None}, {"a": 0.4, "b": None, "c": 0.2}) == {
        "a": 1.5, "b": None, "c": None}
    assert ratios({"a": 0.6}, {"a": 0.0}) == {"a": None}


def test_rounds_alternate_which_controller_starts_first() -> None:
    assert [round_order(i)[0] for i in range(1, 5)] == ["pyctrl", "upstream", "pyctrl",
                                                        "upstream"]
    assert set(round_order(2)) == {"pyctrl", "upstream"}


def test_the_schedule_fires_on_a_minute_a_month_ahead() -> None:
    now = 1_764_000_000.5
    tick = one_year_schedule_tick(now)
    assert tick % 60 == 0
    assert 30 * 86400 <= tick - now < 30 * 86400 + 60


def test_defaults_and_registration() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args([])
    assert (args.cronjobs, args.runs, args.warmup_rounds, args.import_runs) == (2000, 5, 1, 3)
    assert (args.profile, args.warmup) == (False, 0.0)
    assert SUBCOMMANDS["startup"] == "bench.startup"


# -- the signals: KCM klog lines, pyctrl's gauge -------------------------------------------
KCM_LOG = """\
I1126 14:47:05.406375   28173 cronjob_controllerv2.go:143] "Starting cronjob controller v2"
I1126 14:47:05.496641   28173 shared_informer.go:377] "Caches are synced"
I1126 14:47:05.542699   28173 cronjob_controllerv2.go:230] "Re-queuing cronjob" cronjob="s/a"
I1126 14:47:05.548570   28173 cronjob_controllerv2.go:230] "Re-queuing cronjob" cronjob="s/b"
"""


def test_klog_first_is_the_first_matching_lines_local_time() -> None:
    want = datetime(2026, 11, 26, 14, 47, 5, 542699).timestamp()
    assert klog_first(KCM_LOG, KCM_SYNC_DONE, year=2026) == want
    assert klog_first(KCM_LOG, "no such line", year=2026) is None
    assert klog_cache_synced(KCM_LOG, year=2026) == datetime(
        2026, 11, 26, 14, 47, 5, 496641).timestamp()


def test_klog_populated_waits_for_every_type() -> None:
    log = (
        'I1126 14:52:27.339268   1 reflector.go:446] "Caches populated" type="*v1.Secret"\n'
        'I1126 14:52:27.352021   1 reflector.go:446] "Caches populated" type="*v1.CronJob"\n'
        'I1126 14:52:27.353353   1 reflector.go:446] "Caches populated" type="*v1.Job"\n'
        'I1126 14:52:29.000000   1 reflector.go:446] "Caches populated" type="*v1.Job"\n'
    )
    want = datetime(2026, 11, 26, 14, 52, 27, 353353).timestamp()
    assert klog_populated(log, ("*v1.Job", "*v1.CronJob"), year=2026) == want
    assert klog_populated(log, ("*v1.Job", "*v1.Pod"), year=2026) is None


def test_first_reconcile_timestamp_from_metrics() -> None:
    text = (
        "# HELP pyctrl_controller_first_reconcile_timestamp_seconds Unix time ...\n"
        "# TYPE pyctrl_controller_first_reconcile_timestamp_seconds gauge\n"
        'pyctrl_controller_first_reconcile_timestamp_seconds{controller="cronjob"} '
        "1.7641684251234e+09\n"
        'pyctrl_controller_first_reconcile_timestamp_seconds{controller="other"} 0.0\n'
    )
    assert first_reconcile_timestamp(text) == pytest.approx(1764168425.1234)
    assert first_reconcile_timestamp(text.replace("1.7641684251234e+09", "0.0")) is None
    assert first_reconcile_timestamp("") is None
