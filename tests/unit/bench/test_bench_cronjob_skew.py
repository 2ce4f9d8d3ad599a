"""The pure parts of ``bench.cronjob_skew``: percentiles, ratios and goals, skew figures, the
klog and /proc readings of the cache-sync time, the profile table, the limit phase's Job.

The benchmark itself needs a control plane and real minutes; these tests pin down the
arithmetic and the parsing it reports on.
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import UTC, datetime

import pytest

from bench.cronjob_skew import (
    cronjob,
    finished_status,
    history_job,
    job_template,
    one_tick,
    planned_tick,
    profile_window,
)
from bench.cronjob_skew.limit import limit_job
from bench.cronjob_skew.probe import CpuTrace, JobSeen, burst_fields, percentile, summary
from bench.cronjob_skew.profile import parse_collapsed, top_table
from bench.cronjob_skew.report import GOALS, goals, ratio, ratios, skew_fields
from bench.cronjob_skew.sync import (
    boottime,
    cache_sync_seconds,
    klog_cache_synced,
    process_start,
)

TICK = datetime(2026, 11, 25, 12, 0, tzinfo=UTC).timestamp()
PYCTRL_ANNOTATION = "batch.pyctrl.io/scheduled-timestamp"


# -- percentiles ---------------------------------------------------------------------------
def test_percentile_is_nearest_rank() -> None:
    data = [float(i) for i in range(1, 101)]  # 1..100
    assert percentile(data, 50) == 50.0
    assert percentile(data, 99) == 99.0
    assert percentile(data, 100) == 100.0
    assert percentile([3.0], 99) == 3.0
    # 10 values: rank ceil(9.9) = 10 -> the maximum, not an interpolation
    assert percentile([float(i) for i in range(10)], 99) == 9.0


def test_summary_of_nothing_is_all_none() -> None:
    empty = summary([])
    assert empty["count"] == 0
    assert empty["p99"] is None and empty["max"] is None


def test_summary_rounds_to_milliseconds() -> None:
    s = summary([0.12345, 2.0, 1.0])
    assert s == {"count": 3, "min": 0.123, "p50": 1.0, "p90": 2.0, "p99": 2.0, "max": 2.0,
                 "mean": pytest.approx(1.041, abs=1e-3)}


# -- ratios and goals ----------------------------------------------------------------------
def test_ratio_needs_two_numbers_and_a_positive_divisor() -> None:
    assert ratio(3.0, 4) == 0.75
    assert ratio(2, 3) == 0.667
    assert ratio(None, 1.0) is None
    assert ratio(1.0, 0.0) is None
    assert ratio(1.0, "2") is None
    assert ratio(True, 1.0) is None


def _phase(p99: float, cpu: float, rss: float, created_p99: float,
           sync: float | None = None) -> dict[str, object]:
    return {"p99": p99, "p50": p99 / 2, "max": p99 * 1.1, "cpu_seconds": cpu,
            "peak_rss_mib": rss, "skew_created": {"p99": created_p99},
            "cache_sync_seconds": sync}


def test_ratios_against_upstream_and_the_limit() -> None:
    py = _phase(p99=3.0, cpu=6.0, rss=90.0, created_p99=2.0, sync=1.5)
    up = _phase(p99=6.0, cpu=3.0, rss=150.0, created_p99=5.0, sync=1.0)
    limit = _phase(p99=2.5, cpu=0.0, rss=0.0, created_p99=2.0)
    r = ratios(py, up, limit)
    assert r["p99"] == 0.5
    assert r["p99_vs_limit"] == 1.2
    assert r["upstream_p99_vs_limit"] == 2.4
    assert r["p99_created"] == 0.4
    assert r["p99_created_vs_limit"] == 1.0
    assert r["cpu"] == r["cpu_seconds"] == 2.0
    assert r["rss"] == r["peak_rss_mib"] == 0.6
    assert r["cache_sync"] == 1.5


def test_ratios_of_a_missing_phase_are_none() -> None:
    py = _phase(p99=3.0, cpu=6.0, rss=90.0, created_p99=2.0)
    r = ratios(py, {}, {"error": "no go"})
    assert r["p99"] is None and r["cpu"] is None and r["rss"] is None
    assert r["p99_vs_limit"] is None
    assert r["cache_sync"] is None


def test_goals_judge_each_ratio_at_or_under_its_bound() -> None:
    judged = goals({"p99_vs_limit": 1.15, "p99": 0.51, "cpu": 1.78, "rss": 0.6})
    assert set(judged) == set(GOALS) == {"p99_vs_limit", "p99_vs_upstream", "cpu", "rss"}
    assert judged["p99_vs_limit"] == {"ratio": "p99_vs_limit", "at_most": 1.15,
                                      "value": 1.15, "met": True}
    assert judged["p99_vs_upstream"]["met"] is False
    assert judged["p99_vs_upstream"]["at_most"] == 0.5
    assert judged["cpu"]["met"] is False
    assert judged["rss"]["met"] is True


def test_goals_without_a_ratio_have_no_verdict() -> None:
    judged = goals({"p99": 0.4})
    assert judged["p99_vs_upstream"]["met"] is True
    assert judged["p99_vs_limit"] == {"ratio": "p99_vs_limit", "at_most": 1.15,
                                      "value": None, "met": None}


# -- skew figures --------------------------------------------------------------------------
def _seen(name: str, after: float, created_after: float, annotation: str | None) -> JobSeen:
    annotations = {} if annotation is None else {PYCTRL_ANNOTATION: annotation}
    return JobSeen(name=name, seen_at=TICK + after, created=TICK + created_after,
                   annotations=annotations)


def test_skew_fields_from_the_watch_and_the_creation_timestamps() -> None:
    stamp = "2026-11-25T12:00:00Z"
    jobs = [_seen("a", 0.25, 0.0, stamp), _seen("b", 1.5, 1.0, stamp),
            _seen("c", 2.75, 2.0, None), _seen("d", 0.5, 0.0, "2026-11-25T11:59:00Z")]
    fields = skew_fields(jobs, TICK, 5, PYCTRL_ANNOTATION)
    assert fields["count"] == 4 and fields["missing"] == 1
    assert fields["p50"] == 0.5 and fields["p99"] == 2.75 and fields["max"] == 2.75
    assert fields["skew_created"]["p99"] == 2.0  # type: ignore[index]
    assert fields["annotation_mismatches"] == 2  # absent, and a minute off


# -- cache sync time -----------------------------------------------------------------------
KCM_LOG = """\
I1125 11:59:58.100000   4242 serving.go:386] Generated self-signed cert in-memory
I1125 11:59:59.000000   4242 shared_informer.go:377] "Caches are synced" logger="other"
I1125 12:00:01.250000   4242 cronjob_controllerv2.go:145] "Starting cronjob controller v2"
I1125 12:00:01.260000   4242 shared_informer.go:370] "Waiting for caches to sync"
I1125 12:00:02.500000   4242 shared_informer.go:377] "Caches are synced"
"""


def test_klog_cache_synced_is_the_cronjob_controllers_line() -> None:
    expected = datetime(2026, 11, 25, 12, 0, 2, 500000).timestamp()  # local time, as klog
    assert klog_cache_synced(KCM_LOG, year=2026) == expected


def test_klog_cache_synced_by_controller_name_without_the_start_line() -> None:
    log = 'I0102 03:04:05.000001    7 shared_informer.go:356] "Caches are synced" ' \
          'controller="cronjob"\n'
    assert klog_cache_synced(log, year=2027) == datetime(2027, 1, 2, 3, 4, 5, 1).timestamp()
    assert klog_cache_synced(KCM_LOG.replace("Caches are synced", "x"), year=2026) is None


def test_process_start_of_this_process_is_before_now() -> None:
    started = process_start(os.getpid())
    assert started is not None
    assert 0 < started <= boottime()
    assert cache_sync_seconds(started, started + 1.25) == 1.25
    assert cache_sync_seconds(None, 1.0) is None
    assert cache_sync_seconds(1.0, None) is None
    assert process_start(2**22 + 12345) is None  # above pid_max: no such process
    assert time.clock_gettime(time.CLOCK_BOOTTIME) >= started


# -- profile table -------------------------------------------------------------------------
COLLAPSED = """\
<module> (main.py:1);run (ctl.py:10);sync (ctl.py:50);create (rest.py:5) 6
<module> (main.py:1);run (ctl.py:10);sync (ctl.py:50) 2
worker (ctl.py:80);sync (ctl.py:50);sync (ctl.py:50) 2
not a stack line
"""


def test_parse_collapsed_counts_self_and_total_once_per_stack() -> None:
    profile = parse_collapsed(COLLAPSED.splitlines())
    assert profile.samples == 10
    assert profile.self_counts["create (rest.py:5)"] == 6
    assert profile.self_counts["sync (ctl.py:50)"] == 4
    # recursion (sync on sync) counts once per stack for the total
    assert profile.total_counts["sync (ctl.py:50)"] == 10
    assert profile.total_counts["run (ctl.py:10)"] == 8
    assert profile.total_counts["worker (ctl.py:80)"] == 2


def test_top_table_lists_both_orders_with_percentages() -> None:
    table = top_table(parse_collapsed(COLLAPSED.splitlines()), top=2, title="t")
    lines = table.splitlines()
    assert lines[0] == "t" and lines[1] == "samples: 10"
    by_total = lines.index("top 2 by total (cumulative)")
    by_self = lines.index("top 2 by self (tottime)")
    assert lines[by_total + 2].split() == ["4", "40.0", "10", "100.0", "sync", "(ctl.py:50)"]
    assert lines[by_self + 2].split()[:4] == ["6", "60.0", "6", "60.0"]
    assert lines[by_self + 2].endswith("create (rest.py:5)")


# -- the Jobs the bench creates ------------------------------------------------------------
def test_limit_job_is_pyctrls_job_for_the_first_cronjob() -> None:
    job = limit_job("skew-limit", TICK, job_template())
    meta = job["metadata"]
    assert isinstance(meta, dict)
    assert meta["name"] == f"cj-00000-{int(TICK) // 60}"
    assert meta["namespace"] == "skew-limit"
    assert meta["annotations"] == {PYCTRL_ANNOTATION: "2026-11-25T12:00:00Z"}
    assert meta["ownerReferences"][0]["name"] == "cj-00000"
    assert job["spec"] == job_template()["spec"]


def test_history_job_is_owned_and_finished_status_reads_complete() -> None:
    owner = {"apiVersion": "batch/v1", "kind": "CronJob",
             "metadata": {"name": "cj-00007", "uid": "u-7"}}
    job = history_job("upstream", owner, int(TICK) // 60 - 1)
    meta = job["metadata"]
    assert meta["name"] == f"cj-00007-{int(TICK) // 60 - 1}"
    assert meta["annotations"] == {
        "batch.kubernetes.io/cronjob-scheduled-timestamp": "2026-11-25T11:59:00Z"}
    ref = meta["ownerReferences"][0]
    assert (ref["uid"], ref["controller"], ref["apiVersion"]) == ("u-7", True, "batch/v1")
    status = finished_status(TICK)["status"]
    assert [c["type"] for c in status["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert status["completionTime"] == status["startTime"] == "2026-11-25T12:00:00Z"


# -- the one-tick schedule ----------------------------------------------------------------------
def test_tick_schedule_fires_at_the_tick_and_not_in_the_minutes_around_it() -> None:
    from croniter import croniter

    body = cronjob("cj-00001", TICK + 37 * 60)  # 12:37 UTC
    spec = body["spec"]
    assert spec["schedule"] == "37 12 25 11 *"
    assert spec["timeZone"] == "Etc/UTC"
    it = croniter(spec["schedule"], datetime.fromtimestamp(TICK, UTC))
    assert it.get_next(float) == TICK + 37 * 60
    assert it.get_next(float) - TICK > 300 * 86400  # the next run is a year on
    assert cronjob("cj-00001")["spec"]["schedule"] == "* * * * *"
    assert "timeZone" not in cronjob("cj-00001")["spec"]


def _args(**kw: object) -> argparse.Namespace:
    base: dict[str, object] = {"schedule": "auto", "cronjobs": 2000, "tick_lead": None,
                               "warmup": 15.0}
    return argparse.Namespace(**(base | kw))


def test_one_tick_from_5000_cronjobs_unless_chosen() -> None:
    assert not one_tick(_args(cronjobs=4999))
    assert one_tick(_args(cronjobs=5000))
    assert one_tick(_args(cronjobs=10, schedule="tick"))
    assert not one_tick(_args(cronjobs=10000, schedule="minute"))


def test_planned_tick_is_the_first_minute_boundary_after_the_lead() -> None:
    now = TICK + 1.0
    # 10000/150 + 15 + 60 = 141.7 s -> 12:02:22.7 -> 12:03
    assert planned_tick(_args(cronjobs=10000), False, now) == TICK + 180
    # sharded: + 50 s -> 12:03:12.7 -> 12:04
    assert planned_tick(_args(cronjobs=10000), True, now) == TICK + 240
    assert planned_tick(_args(tick_lead=59.0), False, now) == TICK + 60
    assert planned_tick(_args(tick_lead=59.5), False, now) == TICK + 120


def _trace(readings: list[tuple[float, dict[str, float]]]) -> CpuTrace:
    trace = CpuTrace({"apiserver": 1, "controller": 2})
    trace.readings = readings
    return trace


def test_cpu_trace_interpolates_between_readings_and_refuses_untraced_spans() -> None:
    trace = _trace([(100.0, {"apiserver": 10.0, "controller": 1.0}),
                    (101.0, {"apiserver": 11.0, "controller": 1.0}),
                    (102.0, {"apiserver": 11.5, "controller": 3.0})])
    assert trace.between(100.5, 101.5) == {"apiserver": 0.75, "controller": 1.0}
    assert trace.between(100.0, 102.0) == {"apiserver": 1.5, "controller": 2.0}
    assert trace.between(99.0, 101.0) == {"apiserver": None, "controller": None}
    assert trace.between(101.0, 103.0)["apiserver"] is None


def test_burst_is_the_cpu_from_the_tick_to_the_last_job_seen() -> None:
    trace = _trace([(100.0, {"apiserver": 10.0, "controller": 1.0}),
                    (104.0, {"apiserver": 16.0, "controller": 3.0})])
    burst = burst_fields(trace, 100.0, [101.0, 102.0, 100.5, 102.0])
    assert burst["seconds"] == 2.0
    assert burst["cpu_seconds"] == {"apiserver": 3.0, "controller": 1.0}
    assert burst["cores"] == {"apiserver": 1.5, "controller": 0.5}
    assert burst["cores_total"] == 2.0
    assert burst["apiserver_cpu_ms_per_job"] == 750.0
    assert burst_fields(trace, 100.0, []) == {"seconds": None}


def test_cpu_trace_reads_this_process() -> None:
    trace = CpuTrace({"self": os.getpid()}, interval=3600)
    trace.start()
    trace.stop()
    assert len(trace.readings) == 2
    assert all(reading["self"] > 0 for _, reading in trace.readings)


def test_profile_window_is_the_whole_cpu_window_or_the_burst_from_the_tick() -> None:
    assert profile_window(argparse.Namespace(profile_burst=None), 600.0) == (595.0, 65.0)
    assert profile_window(argparse.Namespace(profile_burst=3.0), 600.0) == (600.0, 3.0)
    assert profile_window(argparse.Namespace(profile_burst=0.2), 600.0) == (600.0, 1.0)


def test_gc_pauses_are_read_from_the_exposition_and_differenced() -> None:
    from prometheus_client import CollectorRegistry, Histogram, generate_latest

    from bench.cronjob_skew.controllers import gc_delta, parse_gc_histogram
    from pyctrl.serving.gcmetrics import GC_PAUSE_BUCKETS

    reg = CollectorRegistry()
    h = Histogram("python_gc_duration_seconds", "pauses", ["generation"], registry=reg,
                  buckets=GC_PAUSE_BUCKETS)
    h.labels(generation="0").observe(0.0002)
    before = parse_gc_histogram(generate_latest(reg).decode())
    h.labels(generation="0").observe(0.0003)
    h.labels(generation="2").observe(0.07)
    after = parse_gc_histogram(generate_latest(reg).decode())
    delta = gc_delta(before, after)
    assert delta is not None
    assert delta["0"]["count"] == 1 and delta["0"]["max_le"] == "0.0005"
    assert delta["2"]["count"] == 1 and delta["2"]["max_le"] == "0.1"
    assert delta["2"]["sum_ms"] == 70.0
    assert gc_delta(None, after) is None
    assert parse_gc_histogram("not metrics\n") == {}
