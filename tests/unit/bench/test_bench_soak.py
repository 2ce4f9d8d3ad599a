"""The pure parts of ``bench.soak``: least-squares slopes, the analysis, /proc sampling.

The benchmark itself needs a control plane and real minutes; these tests pin down the
arithmetic it reports and that sampling reads the right /proc fields (of this process).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from bench.cronjob_skew.probe import ProcessSampler
from bench.soak import (
    analyse,
    check_churn,
    least_squares_slope,
    parse_status,
    read_process,
)
from tests.waiting import eventually


def test_slope_of_an_exact_line() -> None:
    xs = [0.0, 1.0, 2.0, 3.0, 4.0]
    assert least_squares_slope(xs, [5.0 + 0.25 * x for x in xs]) == pytest.approx(0.25)


def test_slope_is_least_squares_not_endpoints() -> None:
    # One late outlier: the endpoint slope would be 2.0, the fitted line's is 1.8.
    xs = [0.0, 1.0, 2.0, 3.0]
    ys = [0.0, 0.0, 0.0, 6.0]
    # mean x 1.5, mean y 1.5; sxy = (-1.5)(-1.5)+(-0.5)(-1.5)+(0.5)(-1.5)+(1.5)(4.5) = 9
    # sxx = 5 -> 1.8
    assert least_squares_slope(xs, ys) == pytest.approx(1.8)


def test_slope_needs_two_distinct_points() -> None:
    assert least_squares_slope([], []) is None
    assert least_squares_slope([1.0], [2.0]) is None
    assert least_squares_slope([1.0, 1.0], [2.0, 3.0]) is None
    with pytest.raises(ValueError):
        least_squares_slope([1.0, 2.0], [1.0])


def _series(rss: list[float], threads: list[int] | None = None,
            fds: list[int] | None = None) -> list[dict[str, float]]:
    n = len(rss)
    return [{"minute": float(i), "rss_mib": rss[i],
             "threads": float((threads or [10] * n)[i]), "fds": float((fds or [20] * n)[i])}
            for i in range(n)]


def test_analyse_leaves_out_the_warm_up() -> None:
    # A steep start (40 -> 100 MiB in 3 minutes), then flat: the goal is met.
    result = analyse(_series([40.0, 70.0, 90.0, 100.0, 100.0, 100.0, 100.0, 100.0]), 3.0)
    assert result["steady_samples"] == 5
    assert result["rss_slope_mib_per_10min"] == pytest.approx(0.0)
    assert result["goal"] == {"rss_slope_mib_per_10min_lt_2": True}
    assert result["max_rss_mib"] == 100.0
    assert result["rss_mib_steady_first"] == 100.0


def test_analyse_reports_growth_per_ten_minutes() -> None:
    # 0.5 MiB per minute after warm-up = 5 MiB per 10 minutes: the goal is missed.
    rss = [50.0, 80.0, 90.0] + [100.0 + 0.5 * i for i in range(6)]
    threads = [5, 9, 9, 9, 9, 10, 10, 11, 11]
    fds = [7, 30, 30, 30, 31, 32, 33, 34, 35]
    result = analyse(_series(rss, threads, fds), 3.0)
    assert result["rss_slope_mib_per_10min"] == pytest.approx(5.0)
    assert result["goal"] == {"rss_slope_mib_per_10min_lt_2": False}
    assert result["max_threads"] == 11
    assert result["max_fds"] == 35
    # threads 9,9,10,10,11,11 over minutes 3..8: 0.457 per minute (reported to 3 decimals)
    assert result["threads_slope_per_10min"] == pytest.approx(4.571, abs=1e-3)
    assert result["fds_slope_per_10min"] == pytest.approx(10.0)


def test_analyse_without_steady_samples_has_no_verdict() -> None:
    result = analyse(_series([40.0, 70.0, 90.0]), 3.0)
    assert result["rss_slope_mib_per_10min"] is None
    assert result["goal"] == {"rss_slope_mib_per_10min_lt_2": None}


def test_parse_status_reads_integer_fields() -> None:
    text = "Name:\tpython3\nState:\tS (sleeping)\nVmHWM:\t  51200 kB\nVmRSS:\t   40960 kB\n" \
           "Threads:\t7\nSigQ:\t0/63704\n"
    fields = parse_status(text)
    assert fields["VmRSS"] == 40960
    assert fields["VmHWM"] == 51200
    assert fields["Threads"] == 7
    assert "Name" not in fields and "State" not in fields


def test_read_process_sees_this_process_threads_and_fds(tmp_path: Path) -> None:
    before = read_process(os.getpid())
    assert before is not None
    assert before.rss_kib > 0 and before.hwm_kib >= before.rss_kib
    assert before.cpu_seconds > 0
    release = threading.Event()
    thread = threading.Thread(target=release.wait, name="soak-test-thread")
    thread.start()
    try:
        with (tmp_path / "f").open("w"):
            during = read_process(os.getpid())
    finally:
        release.set()
        thread.join()
    assert during is not None
    assert during.threads == before.threads + 1
    assert during.fds == before.fds + 1


def test_the_rss_peak_sampler_reads_this_process_and_joins_its_thread() -> None:
    sampler = ProcessSampler(os.getpid(), interval=0.01)  # soak's per-minute peak, faster
    sampler.start()
    eventually(lambda: sampler.samples >= 2, what="two RSS readings")
    figures = sampler.stop()
    assert sampler.peak_rss_kib > 0  # (VmHWM may lag VmRSS: no ordering between them)
    assert figures["rss_samples"] == sampler.samples >= 2
    assert f"sampler-{os.getpid()}" not in {t.name for t in threading.enumerate()}


def test_read_process_of_a_missing_pid_is_none() -> None:
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    assert read_process(pid_max + 1) is None


def test_a_controller_that_created_no_jobs_is_not_a_soak() -> None:
    error = check_churn(cronjobs=500, minutes_run=8, jobs_created=0)
    assert error is not None and "0 Jobs in 8 minutes" in error
    assert check_churn(cronjobs=500, minutes_run=8, jobs_created=499) is not None
    assert check_churn(cronjobs=500, minutes_run=8, jobs_created=3900) is None
    assert check_churn(cronjobs=500, minutes_run=0, jobs_created=0) is None
