"""dialect.py: why a schedule can never run, bounded numbers, and cost linear in the length."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from cronjob_controller.dialect import (
    MIN_EVERY,
    CronFields,
    ScheduleError,
    check,
    never_reason,
    satisfiable,
)


def fields(spec: str) -> CronFields:
    checked = check(spec)
    assert isinstance(checked, CronFields)
    return checked


# ---------------------------------------------------------------------------------------
# Never-satisfiable schedules


@pytest.mark.parametrize(("spec", "reason"), [
    ("0 0 30 2 *", "day 30 never occurs in February"),
    ("0 0 31 4 *", "day 31 never occurs in April"),
    ("59 23 31 2 *", "day 31 never occurs in February"),
    ("0 0 30,31 feb *", "days 30 and 31 never occur in February"),
    ("0 0 31 4,6,9,11 *", "day 31 never occurs in April, June, September or November"),
    ("0 0 31 apr-jun/2 ?", "day 31 never occurs in April or June"),
    ("0 0 30 2 */1", "day 30 never occurs in February"),  # */1 keeps the star bit: AND
    ("0 0 30 2 ,", "day 30 never occurs in February"),  # OR with no weekday
    ("0 0 , * *", "the day-of-month field lists no value"),
    ("0 0 * * ,", "the day-of-week field lists no value"),
    ("0 0 , * ,", "neither the day-of-month nor the day-of-week field lists a value"),
    (", 0 * * *", "the minute field lists no value"),
    ("0 , * * *", "the hour field lists no value"),
    ("0 0 1 , *", "the month field lists no value"),
])
def test_never_satisfiable_schedule_is_rejected_saying_why(spec: str, reason: str) -> None:
    with pytest.raises(ScheduleError) as err:
        check(spec)
    assert str(err.value) == f"{reason}, so the schedule would never run"


@pytest.mark.parametrize("spec", [
    "0 0 30 2 1",  # both restricted: OR, so every Monday in February
    "0 0 30 2 0-6",  # 0-6 is a restriction (no star bit): OR again
    "0 0 29 2 *",  # leap years
    "0 0 30,31 2,4 *",  # April 30
    "0 0 31 * *",
    "0 0 , * 1",  # no day of the month, OR Mondays
    "0 0 * 2 mon",
])
def test_satisfiable_schedules_are_accepted(spec: str) -> None:
    f = fields(spec)
    assert never_reason(f) is None
    assert satisfiable(f)


# ---------------------------------------------------------------------------------------
# @every


def test_min_every_is_one_minute() -> None:
    assert MIN_EVERY.total_seconds() == 60
    assert check("@every 1m") == MIN_EVERY
    assert check("@every 60000ms") == MIN_EVERY
    with pytest.raises(ScheduleError, match="Jobs are named per minute"):
        check("@every 59999ms")


# ---------------------------------------------------------------------------------------
# Bounded numbers


def test_numbers_too_long_for_any_field_are_out_of_range_not_a_crash() -> None:
    # int() refuses > 4300 digits with a plain ValueError (not a ScheduleError).
    with pytest.raises(ScheduleError, match=r'minute field .*"1{10}" is out of range'):
        check("1" * 10 + " * * * *")
    with pytest.raises(ScheduleError, match="out of range"):
        check("*/" + "7" * 5000 + " * * * *")
    assert fields("0000000000007 * * * *").minutes == {7}  # leading zeros, as Go's Atoi
    with pytest.raises(ScheduleError, match="too large"):
        check("@every " + "9" * 5000 + "h")
    assert check("@every 1." + "5" * 5000 + "h") == check("@every 5599s")  # 1.555...h


# ---------------------------------------------------------------------------------------
# Cost


def _long_list(items: int) -> str:
    # Long atoms (leading zeros) make each list item cheap while the field is long, so a
    # per-item cost proportional to the field's length (the old message formatting) would
    # dominate: quadratic cost shows as a 256x ratio between 1x and 16x the length.
    atom = "0" * 199 + "{}"
    return ",".join(atom.format(i % 10) for i in range(items)) + " * * * *"


def _cpu_seconds(fn: Callable[[], object], repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def test_checking_a_long_list_costs_linear_time() -> None:
    # A relative measurement, never an absolute threshold: 16x the length may cost up to
    # 48x the time (linear is 16x; memory effects and a busy machine add noise), far from
    # the 256x of a quadratic check (the old code measured 72-89x here). Best of several
    # runs, in CPU time.
    small, large = _long_list(500), _long_list(8_000)
    assert len(large) == 16 * len(small) - 15 * len(" * * * *") + 15
    check(small)  # warm up
    ratio = _cpu_seconds(lambda: check(large)) / _cpu_seconds(lambda: check(small))
    assert ratio < 48, f"16x the length cost {ratio:.0f}x the time: not linear"
