"""Cron schedules: the Kubernetes dialect, checked by us, with :mod:`.cronmath` doing the
arithmetic.

Contract:

* :func:`parse` accepts exactly what Kubernetes accepts (robfig/cron ``ParseStandard``):
  five fields ``minute hour day-of-month month day-of-week`` built from ``*``, ``?``, numbers,
  lists, ranges, steps and month/weekday names; the descriptors ``@yearly``, ``@annually``,
  ``@monthly``, ``@weekly``, ``@daily``, ``@midnight``, ``@hourly``; and ``@every <Go
  duration>``. Anything else raises :class:`ScheduleError` whose message names the field and
  the problem; 6/7 fields, ``L``, ``W``, ``#``, ``H`` and ``TZ=``/``CRON_TZ=`` get dedicated
  messages (a zone belongs in ``spec.timeZone``). Stricter than Kubernetes where a schedule
  could never run as meant: one that never matches (``0 0 30 2 *``, "day 30 never occurs in
  February") and ``@every`` under one minute are refused (see :mod:`.dialect`).
* Day-of-month and day-of-week combine with OR when both are restricted and with AND when
  either is a bare ``*``/``?`` (robfig's rule: ``*/2`` is restricted, ``*`` and ``*/1`` are not).
* Times in and out are timezone-aware ``datetime``; every returned time is in **UTC**.
  Cron fields are matched against wall-clock time in the schedule's zone. :mod:`.cronmath`
  only ever sees naive wall-clock times (pure calendar arithmetic, no DST); we map each
  matching wall time to one instant ourselves:

  - a wall time that exists once maps to that instant;
  - a wall time inside a repeated hour (DST ends) maps to its **first** occurrence only;
  - a wall time inside a skipped hour (DST starts) maps to the first instant after the gap;
    several skipped wall times collapse into that one instant (one run, like Vixie cron).

  (croniter 7, which did the arithmetic before, given an aware start time moves skipped
  times forward too, but for ambiguous times it prefers whichever occurrence follows the
  start time, so a schedule like ``30 1 * * *`` runs twice on the night clocks go back; our
  mapping runs it once.)
* ``@every D`` ignores time zones: its times are ``floor_to_second(anchor) + k*D`` (k >= 1), as
  upstream's ConstantDelaySchedule. D is truncated to whole seconds; :func:`parse` refuses
  D under one minute (``dialect.MIN_EVERY``), so consecutive runs fall in distinct minutes
  and get distinct Job names even when D is not a whole number of minutes.
* Any aware datetime is accepted, even at the ends of the calendar (a hand-written status
  may hold ``0001-01-01``): times beyond what ``datetime`` can represent mean "no time" (None),
  never an exception. :func:`within_starting_deadline` and :func:`deadline_window_start` are
  safe for any integer deadline (int64 and beyond): they compare in integer microseconds and
  clamp instead of building an out-of-range ``timedelta``.
* :meth:`Schedule.most_recent` is exact: it returns the latest scheduled time ``t`` with
  ``anchor < t <= now``. The count of times in that window is exact up to
  ``TOO_MANY_MISSED + 1`` and saturates there (we stop counting and jump straight to the
  latest time), so a very old anchor costs at most ~100 calendar searches.

Schedule objects are immutable and safe to share between threads. A
:class:`CronSchedule` remembers its last few :meth:`~Schedule.next_after` answers as
intervals ``[t, answer)`` (every query in one has that answer, since the answer is the first
scheduled instant after ``t``): the syncs of one tick, which ask about the same minutes, walk
the calendar once per schedule. :func:`parse` caches by ``(spec, zone)``, so a changed
schedule or zone is another object with its own memo.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache

from cronjob_controller.cronmath import last_match, next_match
from cronjob_controller.dialect import (
    CronFields,
    ScheduleError,
    check,
    parse_go_duration,
    satisfiable,
)

__all__ = [
    "TOO_MANY_MISSED",
    "CronFields",
    "CronSchedule",
    "EverySchedule",
    "Schedule",
    "ScheduleError",
    "check",
    "deadline_window_start",
    "parse",
    "parse_go_duration",
    "within_starting_deadline",
]

TOO_MANY_MISSED = 100
"""More than this many missed times in (anchor, now] is reported as TooManyMissedTimes."""

_COUNT_CAP = TOO_MANY_MISSED + 1
_MEMO_SIZE = 4  # next_after intervals a CronSchedule keeps
_MICROSECOND = timedelta(microseconds=1)
# The instants we compute with: a day inside datetime's range, so that reading them in any
# zone (offsets are under a day) cannot overflow.
_EARLIEST = datetime.min.replace(tzinfo=UTC) + timedelta(days=1)
_LATEST = datetime.max.replace(tzinfo=UTC) - timedelta(days=1)
# Leaving datetime's range: datetime arithmetic raises OverflowError, a constructor
# ValueError ("year 10000 is out of range").
_OUT_OF_RANGE = (OverflowError, ValueError)


def _wall(t: datetime, zone: tzinfo) -> datetime:
    """The naive wall-clock reading of instant ``t`` in ``zone``."""
    return t.astimezone(zone).replace(tzinfo=None)


def _instant(wall: datetime, zone: tzinfo) -> datetime:
    """The one instant (UTC) at which wall time ``wall`` runs, per the module's DST rules."""
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)  # fold=0 = first occurrence
    if _wall(first, zone) == wall:
        return first
    return _gap_end(wall, zone)


def _gap_end(wall: datetime, zone: tzinfo) -> datetime:
    """First instant after the DST gap that swallows ``wall`` (binary search on seconds)."""
    before = wall.replace(tzinfo=zone, fold=0).utcoffset()
    after = wall.replace(tzinfo=zone, fold=1).utcoffset()
    assert before is not None and after is not None
    lo = (wall - after).replace(tzinfo=UTC)  # still on the old offset
    hi = (wall - before).replace(tzinfo=UTC)  # already on the new offset
    while hi - lo > timedelta(seconds=1):
        mid = lo + (hi - lo) / 2
        mid = mid.replace(microsecond=0)
        if mid.astimezone(zone).utcoffset() == before:
            lo = mid
        else:
            hi = mid
    return hi


def _require_aware(*times: datetime) -> None:
    for t in times:
        if t.tzinfo is None or t.utcoffset() is None:
            raise ValueError(f"naive datetime {t!r}: pass timezone-aware times")


def within_starting_deadline(
    scheduled: datetime, now: datetime, starting_deadline_seconds: int | None
) -> bool:
    """Whether a run for ``scheduled`` may still start at ``now``: ``now < scheduled + D``.

    No deadline (None) always allows; ``D = 0`` never does, since ``scheduled <= now``.
    """
    _require_aware(scheduled, now)
    if starting_deadline_seconds is None:
        return True
    # Exact integer microseconds: no timedelta(seconds=D), which overflows beyond ~8.6e13.
    return (now - scheduled) // _MICROSECOND < starting_deadline_seconds * 1_000_000


def deadline_window_start(now: datetime, starting_deadline_seconds: int) -> datetime:
    """``now - D`` (UTC), the start of the window ``(now - D, now]`` in which a missed time
    could still have started; a D reaching beyond the calendar clamps to its start.

    Safe for any integer D (an object stored before the CRD's maximum may hold a huge one);
    D <= 0 gives ``now`` (an empty window).
    """
    _require_aware(now)
    now = now.astimezone(UTC)
    if starting_deadline_seconds <= 0:
        return now
    if starting_deadline_seconds * 1_000_000 >= (now - _EARLIEST) // _MICROSECOND:
        return _EARLIEST
    return now - timedelta(seconds=starting_deadline_seconds)


class Schedule(ABC):
    """A parsed schedule bound to the zone its cron fields are read in."""

    __slots__ = ("spec", "zone")

    def __init__(self, spec: str, zone: tzinfo) -> None:
        self.spec = spec
        self.zone = zone

    @abstractmethod
    def next_after(self, t: datetime, anchor: datetime | None = None) -> datetime | None:
        """The first scheduled time strictly after ``t`` (UTC), or None if there is none.

        ``anchor`` only matters for ``@every``, whose times are laid out from it.
        """

    @abstractmethod
    def most_recent(self, anchor: datetime, now: datetime) -> tuple[datetime | None, int]:
        """``(t, missed)``: the latest scheduled ``t`` with ``anchor < t <= now`` (None if
        none) and how many scheduled times fall in that window, saturating at
        ``TOO_MANY_MISSED + 1``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r}, {self.zone!s})"


class CronSchedule(Schedule):
    """A five-field schedule (descriptors other than ``@every`` are expanded to one)."""

    __slots__ = ("_memo", "_never", "fields")

    def __init__(self, spec: str, zone: tzinfo, fields: CronFields) -> None:
        super().__init__(spec, zone)
        self.fields = fields
        self._never = not satisfiable(fields)
        # ((t, answer), ...), newest first: next_after(x) == answer for t <= x < answer.
        # Replaced whole, never mutated, so threads share it without a lock.
        self._memo: tuple[tuple[datetime, datetime], ...] = ()

    def _next_wall(self, wall: datetime) -> datetime | None:
        return None if self._never else next_match(self.fields, wall)

    def _prev_wall_at_or_before(self, wall: datetime) -> datetime | None:
        return None if self._never else last_match(self.fields, wall)

    def next_after(self, t: datetime, anchor: datetime | None = None) -> datetime | None:
        _require_aware(t)
        if self._never or t >= _LATEST:
            return None
        t = max(t, _EARLIEST)
        memo = self._memo
        for since, answer in memo:
            if since <= t < answer:
                return answer
        try:
            found = self._next_after(t)
        except _OUT_OF_RANGE:
            return None
        if found is not None:
            kept = [(since, answer) for since, answer in memo if answer != found]
            since = min([t, *(s for s, a in memo if a == found)])
            self._memo = ((since, found), *kept[:_MEMO_SIZE - 1])
        return found

    def _next_after(self, t: datetime) -> datetime | None:
        wall = _wall(t, self.zone)
        # Usually one step. More only while walking through the second pass of a repeated
        # hour, whose wall times map to instants before t (their first occurrence).
        while True:
            next_wall = self._next_wall(wall)
            if next_wall is None:
                return None
            instant = _instant(next_wall, self.zone)
            if instant > t:
                return instant
            wall = next_wall

    def latest_at_or_before(self, t: datetime) -> datetime | None:
        """The latest scheduled time ``<= t`` (UTC), or None if there is none."""
        _require_aware(t)
        if self._never or t < _EARLIEST:
            return None
        try:
            return self._latest_at_or_before(min(t, _LATEST))
        except _OUT_OF_RANGE:
            return None

    def _latest_at_or_before(self, t: datetime) -> datetime | None:
        wall = self._prev_wall_at_or_before(_wall(t, self.zone))
        if wall is None:
            return None
        best = _instant(wall, self.zone)
        # If t is in the second pass of a repeated hour, later wall times of that hour
        # already ran (at their first occurrence) before t.
        while (nxt := self._next_wall(wall)) is not None:
            instant = _instant(nxt, self.zone)
            if instant > t:
                break
            wall, best = nxt, instant
        return best

    def most_recent(self, anchor: datetime, now: datetime) -> tuple[datetime | None, int]:
        _require_aware(anchor, now)
        latest: datetime | None = None
        count = 0
        t = anchor
        while count < _COUNT_CAP:
            nxt = self.next_after(t)
            if nxt is None or nxt > now:
                return latest, count
            latest, count, t = nxt, count + 1, nxt
        # Too many to count one by one: the latest is simply the last time <= now.
        return self.latest_at_or_before(now), count


class EverySchedule(Schedule):
    """``@every D``: fixed intervals from the anchor, in absolute time (no zone, no DST)."""

    __slots__ = ("interval",)

    def __init__(self, spec: str, zone: tzinfo, interval: timedelta) -> None:
        super().__init__(spec, zone)
        self.interval = interval

    def next_after(self, t: datetime, anchor: datetime | None = None) -> datetime | None:
        _require_aware(t)
        base = _floor_second(anchor if anchor is not None else t).astimezone(UTC)
        steps = max(1, (t - base) // self.interval + 1)
        try:
            return base + steps * self.interval
        except OverflowError:
            return None

    def most_recent(self, anchor: datetime, now: datetime) -> tuple[datetime | None, int]:
        _require_aware(anchor, now)
        base = _floor_second(anchor).astimezone(UTC)
        steps = (now - base) // self.interval
        if steps < 1:
            return None, 0
        return base + steps * self.interval, min(steps, _COUNT_CAP)


def _floor_second(t: datetime) -> datetime:
    return t.replace(microsecond=0)


@lru_cache(maxsize=4096)
def parse(spec: str, zone: tzinfo = UTC) -> Schedule:
    """Parse ``spec`` (see the module docstring) to a :class:`Schedule` read in ``zone``.

    Raises :class:`ScheduleError` with a user-facing message. Results are cached.
    """
    checked = check(spec)
    if isinstance(checked, timedelta):
        return EverySchedule(spec, zone, checked)
    return CronSchedule(spec, zone, checked)
