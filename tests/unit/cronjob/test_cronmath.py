"""cronmath against croniter, the arithmetic it replaced, on generated schedules.

croniter evaluates :func:`croniter_expr` exactly as robfig evaluates the fields (its own
tests in test_dialect.py); here both searches must give croniter's answer for a few thousand
(schedule, wall time) pairs, including sparse schedules (one minute a year, leap days) and
the OR/AND rule of day-of-month and day-of-week.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest
from croniter import croniter

from cronjob_controller.cronmath import HORIZON_YEARS, last_match, next_match
from cronjob_controller.dialect import CronFields, check, croniter_expr, satisfiable

SEED = 20261126


def _fields(spec: str) -> CronFields:
    fields = check(spec)
    assert isinstance(fields, CronFields)
    return fields


def _pick(rng: random.Random, low: int, high: int) -> str:
    kind = rng.randrange(6)
    if kind == 0:
        return "*"
    if kind == 1:
        return str(rng.randint(low, high))
    if kind == 2:
        a = rng.randint(low, high)
        return f"{a}-{rng.randint(a, high)}"
    if kind == 3:
        return f"*/{rng.randint(1, max(1, (high - low) // 2))}"
    if kind == 4:
        return ",".join(str(v) for v in sorted(rng.sample(range(low, high + 1), 3)))
    a = rng.randint(low, high)
    return f"{a}-{high}/{rng.randint(1, 4)}"


def _schedules(rng: random.Random, n: int) -> list[str]:
    out = ["* * * * *", "37 12 25 11 *", "0 0 29 2 *", "0 0 29 2 1", "59 23 31 12 *",
           "*/7 3 * * 1-5", "0 0 1,15 * 0", "30 1 * * *"]
    while len(out) < n:
        spec = " ".join((_pick(rng, 0, 59), _pick(rng, 0, 23), _pick(rng, 1, 31),
                         _pick(rng, 1, 12), _pick(rng, 0, 6)))
        try:
            fields = check(spec)
        except ValueError:
            continue
        if isinstance(fields, CronFields) and satisfiable(fields):
            out.append(spec)
    return out


def _wall(rng: random.Random) -> datetime:
    base = datetime(2023, 1, 1)
    return base + timedelta(seconds=rng.randrange(6 * 365 * 86400),
                            microseconds=rng.choice((0, 1, 999_999)))


def _oracle_next(fields: CronFields, wall: datetime) -> datetime:
    got: datetime = croniter(croniter_expr(fields), wall, day_or=True).get_next(datetime)
    return got


def _oracle_last(fields: CronFields, wall: datetime) -> datetime:
    start = wall.replace(second=0, microsecond=0) + timedelta(seconds=1)
    got: datetime = croniter(croniter_expr(fields), start, day_or=True).get_prev(datetime)
    return got


def test_both_searches_agree_with_croniter_on_generated_schedules() -> None:
    rng = random.Random(SEED)
    checked = 0
    for spec in _schedules(rng, 300):
        fields = _fields(spec)
        for _ in range(8):
            wall = _wall(rng)
            assert next_match(fields, wall) == _oracle_next(fields, wall), (spec, wall)
            assert last_match(fields, wall) == _oracle_last(fields, wall), (spec, wall)
            checked += 1
    assert checked == 2400


@pytest.mark.parametrize("wall", [datetime(2026, 11, 25, 12, 37), datetime(2026, 11, 25, 12, 37,
                                                                             59, 999_999)])
def test_next_is_strictly_after_and_last_is_at_or_before(wall: datetime) -> None:
    fields = _fields("37 12 25 11 *")
    assert next_match(fields, wall) == datetime(2027, 11, 25, 12, 37)
    assert last_match(fields, wall) == datetime(2026, 11, 25, 12, 37)


def test_leap_day_across_the_skipped_leap_year_2100() -> None:
    fields = _fields("0 0 29 2 *")
    assert next_match(fields, datetime(2096, 3, 1)) == datetime(2104, 2, 29)
    assert last_match(fields, datetime(2104, 2, 28)) == datetime(2096, 2, 29)


def test_none_beyond_the_horizon_and_the_calendar() -> None:
    fields = _fields("0 0 29 2 *")
    assert HORIZON_YEARS >= 8
    assert next_match(fields, datetime(9997, 1, 1)) is None  # no leap day left before 10000
    assert last_match(fields, datetime(1, 2, 28)) is None
    every = _fields("* * * * *")
    assert next_match(every, datetime(9999, 12, 31, 23, 59)) is None
    assert last_match(every, datetime(1, 1, 1, 0, 0)) == datetime(1, 1, 1, 0, 0)


def test_day_of_month_and_week_or_when_both_restricted_and_when_either_is_a_star() -> None:
    both = _fields("0 0 13 * 5")  # the 13th OR any Friday
    assert next_match(both, datetime(2026, 11, 1)) == datetime(2026, 11, 6)  # a Friday
    assert next_match(both, datetime(2026, 11, 6)) == datetime(2026, 11, 13)
    dow_only = _fields("0 0 * * 5")
    assert next_match(dow_only, datetime(2026, 11, 6)) == datetime(2026, 11, 13)
    dom_only = _fields("0 0 13 * *")
    assert next_match(dom_only, datetime(2026, 11, 1)) == datetime(2026, 11, 13)
