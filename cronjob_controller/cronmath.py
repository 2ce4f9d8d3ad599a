"""Calendar arithmetic of five-field cron schedules on naive wall-clock times.

Contract:

* :func:`next_match` is the first wall-clock minute strictly after ``wall`` that ``fields``
  matches (:meth:`CronFields.matches`: robfig's rules, day-of-month and day-of-week OR-ed
  when both are restricted, AND-ed otherwise); :func:`last_match` the latest one at or before
  ``wall`` (its seconds ignored). Both are pure calendar arithmetic: no zone, no DST (the
  caller maps wall times to instants, :mod:`.schedule`).
* They return None when no match lies within :data:`HORIZON_YEARS` of ``wall`` (a
  satisfiable schedule matches at least every 8 years: 29 February across 2100) or when the
  search leaves ``datetime``'s range (years 1..9999); they never raise for that.
* Cost: they skip whole months, days and hours that cannot match and pick the hour and minute
  by bisection, so a call takes at most about 12 + 366 steps per year searched, and never
  searches more than :data:`HORIZON_YEARS`: bounded for any schedule. Measured on this
  project's 2-core machine: 3 us for ``* * * * *``, 17 us for a once-a-year schedule,
  ~130 us for ``0 0 29 2 *`` across the 8 years from 2096 to 2104.

Why not croniter (which did this before): a CronJob tick calls this two or three times per
CronJob, and croniter's stateful ``get_next``/``get_prev`` (``relativedelta`` steps, a lock
around the shared object) took about 28% of the controller's Python CPU at a 10k-CronJob
tick. croniter stays the oracle of the unit tests (tests/unit/cronjob/test_cronmath.py),
which compare both on many generated schedules.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import lru_cache

from cronjob_controller.dialect import CronFields

__all__ = ["HORIZON_YEARS", "last_match", "next_match"]

HORIZON_YEARS = 9
"""How far either search looks before it answers None."""

_MINUTE = timedelta(minutes=1)
_DAY = timedelta(days=1)


def _day_ok(fields: CronFields, t: datetime) -> bool:
    dom = t.day in fields.days_of_month
    dow = (t.weekday() + 1) % 7 in fields.days_of_week  # cron: 0 = Sunday
    if fields.dom_star or fields.dow_star:
        return dom and dow
    return dom or dow


def _first_of_next_month(t: datetime) -> datetime:
    if t.month == 12:
        return datetime(t.year + 1, 1, 1)
    return datetime(t.year, t.month + 1, 1)


def next_match(fields: CronFields, wall: datetime) -> datetime | None:
    """The first matching wall-clock minute strictly after ``wall`` (None: see the contract)."""
    return _within_calendar(_next, fields, wall)


def last_match(fields: CronFields, wall: datetime) -> datetime | None:
    """The latest matching wall-clock minute at or before ``wall`` (None: see the contract)."""
    return _within_calendar(_last, fields, wall)


def _within_calendar(search: Callable[[CronFields, datetime], datetime | None],
                     fields: CronFields, wall: datetime) -> datetime | None:
    try:
        return search(fields, wall)
    except (OverflowError, ValueError):  # the search left years 1..9999
        return None


@lru_cache(maxsize=4096)
def _sorted(fields: CronFields) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The hours and minutes of ``fields``, ascending (computed once per schedule)."""
    return tuple(sorted(fields.hours)), tuple(sorted(fields.minutes))


def _next(fields: CronFields, wall: datetime) -> datetime | None:
    hours, minutes = _sorted(fields)
    t = wall.replace(second=0, microsecond=0, tzinfo=None) + _MINUTE
    limit = wall.year + HORIZON_YEARS
    while t.year <= limit:
        if t.month not in fields.months:
            t = _first_of_next_month(t)
            continue
        if not _day_ok(fields, t):
            t = datetime(t.year, t.month, t.day) + _DAY
            continue
        if t.hour not in fields.hours:
            i = bisect_left(hours, t.hour)
            if i == len(hours):
                t = datetime(t.year, t.month, t.day) + _DAY
            else:
                t = t.replace(hour=hours[i], minute=0)
            continue
        i = bisect_left(minutes, t.minute)
        if i < len(minutes):
            return t.replace(minute=minutes[i])
        t = t.replace(minute=0) + timedelta(hours=1)  # the next hour (maybe the next day)
    return None


def _last(fields: CronFields, wall: datetime) -> datetime | None:
    hours, minutes = _sorted(fields)
    t = wall.replace(second=0, microsecond=0, tzinfo=None)
    limit = wall.year - HORIZON_YEARS
    while t.year >= limit:
        if t.month not in fields.months:
            t = datetime(t.year, t.month, 1) - _MINUTE  # the last minute of the month before
            continue
        if not _day_ok(fields, t):
            t = datetime(t.year, t.month, t.day) - _MINUTE
            continue
        if t.hour not in fields.hours:
            i = bisect_right(hours, t.hour)
            if i == 0:
                t = datetime(t.year, t.month, t.day) - _MINUTE
            else:
                t = t.replace(hour=hours[i - 1], minute=59)
            continue
        i = bisect_right(minutes, t.minute)
        if i > 0:
            return t.replace(minute=minutes[i - 1])
        t = t.replace(minute=0) - _MINUTE  # the hour before (maybe the day before)
    return None
