"""Cron schedules: the Kubernetes dialect, checked by us, with croniter doing the arithmetic.

Contract:

* :func:`parse` accepts exactly what Kubernetes accepts (robfig/cron ``ParseStandard``):
  five fields ``minute hour day-of-month month day-of-week`` built from ``*``, ``?``, numbers,
  lists, ranges, steps and month/weekday names; the descriptors ``@yearly``, ``@annually``,
  ``@monthly``, ``@weekly``, ``@daily``, ``@midnight``, ``@hourly``; and ``@every <Go
  duration>``. Anything else raises :class:`ScheduleError` whose message names the field and
  the problem; 6/7 fields, ``L``, ``W``, ``#``, ``H`` and ``TZ=``/``CRON_TZ=`` get dedicated
  messages (a zone belongs in ``spec.timeZone``).
* Day-of-month and day-of-week combine with OR when both are restricted and with AND when
  either is a bare ``*``/``?`` (robfig's rule: ``*/2`` is restricted, ``*`` and ``*/1`` are not).
* Times in and out are timezone-aware ``datetime``; every returned time is in **UTC**.
  Cron fields are matched against wall-clock time in the schedule's zone. croniter only ever
  sees naive wall-clock times (pure calendar arithmetic, no DST); we map each matching wall
  time to one instant ourselves:

  - a wall time that exists once maps to that instant;
  - a wall time inside a repeated hour (DST ends) maps to its **first** occurrence only;
  - a wall time inside a skipped hour (DST starts) maps to the first instant after the gap;
    several skipped wall times collapse into that one instant (one run, like Vixie cron).

  croniter 7 given an aware start time moves skipped times forward too, but for ambiguous
  times it prefers whichever occurrence follows the start time, so a schedule like
  ``30 1 * * *`` runs twice on the night clocks go back; our mapping runs it once.
* ``@every D`` ignores time zones: its times are ``floor_to_second(anchor) + k*D`` (k >= 1), as
  upstream's ConstantDelaySchedule. D is truncated to whole seconds, minimum one second.
* :meth:`Schedule.most_recent` is exact: it returns the latest scheduled time ``t`` with
  ``anchor < t <= now``. The count of times in that window is exact up to
  ``TOO_MANY_MISSED + 1`` and saturates there (we stop counting and jump straight to the
  latest time), so a very old anchor costs at most ~100 croniter steps.

Schedule objects are immutable and safe to share between threads.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache

from croniter import CroniterBadDateError, croniter

__all__ = [
    "TOO_MANY_MISSED",
    "CronFields",
    "CronSchedule",
    "EverySchedule",
    "Schedule",
    "ScheduleError",
    "check",
    "parse",
    "parse_go_duration",
    "within_starting_deadline",
]

TOO_MANY_MISSED = 100
"""More than this many missed times in (anchor, now] is reported as TooManyMissedTimes."""

_COUNT_CAP = TOO_MANY_MISSED + 1
_ZONE_HINT = "set spec.timeZone instead"


class ScheduleError(ValueError):
    """The schedule is outside the dialect; ``str(err)`` is a message for the user."""


# --------------------------------------------------------------------------------------
# Dialect


@dataclass(frozen=True, slots=True)
class _FieldSpec:
    name: str
    low: int
    high: int
    names: dict[str, int]


_MONTH_NAMES = {n: i + 1 for i, n in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_DOW_NAMES = {n: i for i, n in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_FIELDS = (
    _FieldSpec("minute", 0, 59, {}),
    _FieldSpec("hour", 0, 23, {}),
    _FieldSpec("day-of-month", 1, 31, {}),
    _FieldSpec("month", 1, 12, _MONTH_NAMES),
    _FieldSpec("day-of-week", 0, 6, _DOW_NAMES),
)
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_EVERY = "@every "
_INT = re.compile(r"\+?[0-9]+")  # Go's strconv.Atoi, minus the sign handled by the caller
_LAST = re.compile(r"(?i)(l|lw|[0-9]+l|l-[0-9]+)")
_WEEKDAY = re.compile(r"(?i)[0-9]+w")
_HASH = re.compile(r"(?i)h(\(.*\))?(/.*)?")
_FIELD_FORMAT = "minute hour day-of-month month day-of-week"
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)  # February may have 29


@dataclass(frozen=True, slots=True)
class CronFields:
    """The sets a five-field schedule matches; ``*_star`` flags follow robfig's star bit."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]  # 0 = Sunday
    dom_star: bool
    dow_star: bool

    def matches(self, wall: datetime) -> bool:
        """Whether the wall-clock minute ``wall`` (seconds ignored) is a scheduled time."""
        if (wall.minute not in self.minutes or wall.hour not in self.hours
                or wall.month not in self.months):
            return False
        dom = wall.day in self.days_of_month
        dow = (wall.weekday() + 1) % 7 in self.days_of_week
        if self.dom_star or self.dow_star:
            return dom and dow
        return dom or dow


def _check_extensions(field: _FieldSpec, text: str, atom: str) -> None:
    """Name the non-standard cron extensions Kubernetes rejects, for a clearer message."""
    where = f'{field.name} field "{text}"'
    if _LAST.fullmatch(atom):
        raise ScheduleError(f"{where}: 'L' (last day) is not supported")
    if _WEEKDAY.fullmatch(atom):
        raise ScheduleError(f"{where}: 'W' (nearest weekday) is not supported")
    if _HASH.fullmatch(atom):
        raise ScheduleError(f"{where}: 'H' (hashed values) is not supported")


def _atom_error(field: _FieldSpec, text: str, atom: str) -> ScheduleError:
    """The message for an atom that is neither a number nor a known name."""
    where = f'{field.name} field "{text}"'
    if field.names:
        return ScheduleError(f'{where}: "{atom}" is neither a number nor a {field.name} name')
    return ScheduleError(f'{where}: "{atom}" is not a number')


def _value(field: _FieldSpec, text: str, atom: str, *, names: bool = True) -> int:
    if names and atom.lower() in field.names:
        return field.names[atom.lower()]
    if not _INT.fullmatch(atom):
        raise _atom_error(field, text, atom)
    return int(atom)


def _parse_field(field: _FieldSpec, text: str) -> tuple[frozenset[int], bool]:
    """Values of one field and whether robfig would set its star bit."""
    where = f'{field.name} field "{text}"'
    values: set[int] = set()
    star = False
    for atom in filter(None, text.split(",")):  # robfig drops empty list items
        _check_extensions(field, text, atom)
        range_and_step = atom.split("/")
        if len(range_and_step) > 2:
            raise ScheduleError(f'{where}: too many slashes in "{atom}"')
        low_high = range_and_step[0].split("-")
        atom_star = low_high[0] in ("*", "?")
        if atom_star:  # robfig ignores anything after "*-" here; so do we
            start, end = field.low, field.high
        elif len(low_high) > 2:
            raise ScheduleError(f'{where}: too many hyphens in "{atom}"')
        else:
            start = _value(field, text, low_high[0])
            end = _value(field, text, low_high[1]) if len(low_high) == 2 else start
        step = 1
        if len(range_and_step) == 2:
            step = _value(field, text, range_and_step[1], names=False)
            if len(low_high) == 1:  # "N/step" means "N-max/step"
                end = field.high
            if step > 1:
                atom_star = False
        if start < field.low:
            raise ScheduleError(f"{where}: {start} is below the minimum {field.low}")
        if end > field.high:
            hint = " (use 0 for Sunday)" if field.name == "day-of-week" and end == 7 else ""
            raise ScheduleError(f"{where}: {end} is above the maximum {field.high}{hint}")
        if start > end:
            raise ScheduleError(f"{where}: range start {start} is beyond its end {end}")
        if step == 0:
            raise ScheduleError(f"{where}: the step must be a positive number")
        values.update(range(start, end + 1, step))
        star = star or atom_star
    return frozenset(values), star


def _parse_fields(spec: str) -> CronFields:
    parts = spec.split()
    if len(parts) in (6, 7):
        raise ScheduleError(
            f"expected 5 fields ({_FIELD_FORMAT}), found {len(parts)}: seconds and year "
            "fields are not supported")
    if len(parts) != 5:
        raise ScheduleError(f"expected exactly 5 fields ({_FIELD_FORMAT}), found {len(parts)}")
    if "#" in spec:
        raise ScheduleError("'#' (nth weekday of the month) is not supported")
    parsed = [_parse_field(f, p) for f, p in zip(_FIELDS, parts, strict=True)]
    return CronFields(
        minutes=parsed[0][0], hours=parsed[1][0], days_of_month=parsed[2][0],
        months=parsed[3][0], days_of_week=parsed[4][0],
        dom_star=parsed[2][1], dow_star=parsed[4][1],
    )


_DURATION_UNITS = {
    "ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
    "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000,
}
_NUMBER = re.compile(r"([0-9]*)(?:\.([0-9]*))?")
_UNIT = re.compile(r"[^0-9.]*")
_MAX_DURATION = 2**63 - 1


def parse_go_duration(text: str) -> int:
    """Nanoseconds in a Go ``time.ParseDuration`` string such as ``1h30m`` or ``1.5h``."""
    rest = text
    negative = rest[:1] == "-"
    if rest[:1] in ("-", "+"):
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ScheduleError(f'invalid duration "{text}"')
    total = 0
    while rest:
        number = _NUMBER.match(rest)
        assert number is not None  # the pattern matches the empty string
        whole, fraction = number.group(1), number.group(2) or ""
        if not whole and not fraction:
            raise ScheduleError(f'invalid duration "{text}"')
        rest = rest[number.end():]
        unit_match = _UNIT.match(rest)
        unit = unit_match.group(0) if unit_match else ""
        if not unit:
            raise ScheduleError(f'missing unit in duration "{text}" (use ns, us, ms, s, m or h)')
        if unit not in _DURATION_UNITS:
            raise ScheduleError(
                f'unknown unit "{unit}" in duration "{text}" (use ns, us, ms, s, m or h)')
        rest = rest[len(unit):]
        scale = _DURATION_UNITS[unit]
        total += int(whole or "0") * scale
        if fraction:
            total += int(fraction) * scale // 10 ** len(fraction)
        if total > _MAX_DURATION:
            raise ScheduleError(f'invalid duration "{text}": too large')
    return -total if negative else total


# --------------------------------------------------------------------------------------
# Time arithmetic


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
    return now < scheduled + timedelta(seconds=starting_deadline_seconds)


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

    __slots__ = ("_cron", "_lock", "_never", "fields")

    def __init__(self, spec: str, zone: tzinfo, fields: CronFields) -> None:
        super().__init__(spec, zone)
        self.fields = fields
        self._never = not _satisfiable(fields)
        # croniter objects are stateful, so one per schedule, used under a lock.
        self._cron = None if self._never else croniter(
            _croniter_expr(fields), datetime(2000, 1, 1), day_or=True)
        self._lock = threading.Lock()

    def _next_wall(self, wall: datetime) -> datetime | None:
        if self._cron is None:
            return None
        with self._lock:
            try:
                result: datetime = self._cron.get_next(datetime, start_time=wall)
            except (CroniterBadDateError, OverflowError):
                return None
        return result

    def _prev_wall_at_or_before(self, wall: datetime) -> datetime | None:
        if self._cron is None:
            return None
        start = wall.replace(second=0, microsecond=0) + timedelta(seconds=1)
        with self._lock:
            try:
                result: datetime = self._cron.get_prev(datetime, start_time=start)
            except (CroniterBadDateError, OverflowError):
                return None
        return result

    def next_after(self, t: datetime, anchor: datetime | None = None) -> datetime | None:
        _require_aware(t)
        if self._never:
            return None
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
        if self._never:
            return None
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
        return base + steps * self.interval

    def most_recent(self, anchor: datetime, now: datetime) -> tuple[datetime | None, int]:
        _require_aware(anchor, now)
        base = _floor_second(anchor).astimezone(UTC)
        steps = (now - base) // self.interval
        if steps < 1:
            return None, 0
        return base + steps * self.interval, min(steps, _COUNT_CAP)


def _floor_second(t: datetime) -> datetime:
    return t.replace(microsecond=0)


def _satisfiable(fields: CronFields) -> bool:
    """False for schedules such as ``0 0 30 2 *`` that name a day no month has."""
    if not (fields.minutes and fields.hours and fields.months):
        return False  # e.g. a field of only commas, which robfig accepts
    if not fields.dom_star and not fields.dow_star:
        return bool(fields.days_of_week) or _satisfiable(
            CronFields(fields.minutes, fields.hours, fields.days_of_month, fields.months,
                       frozenset(range(7)), dom_star=False, dow_star=True))
    if fields.dom_star:
        return bool(fields.days_of_week)
    if not fields.days_of_week:
        return False
    return any(d <= _DAYS_IN_MONTH[m - 1] for m in fields.months for d in fields.days_of_month)


def _croniter_expr(fields: CronFields) -> str:
    """An expression croniter evaluates exactly like robfig evaluates ``fields``."""

    def listing(values: frozenset[int], spec: _FieldSpec) -> str:
        if len(values) == spec.high - spec.low + 1:
            return "*"
        return ",".join(str(v) for v in sorted(values))

    dom = listing(fields.days_of_month, _FIELDS[2])
    dow = listing(fields.days_of_week, _FIELDS[4])
    if fields.dom_star or not fields.days_of_month:
        dom = "*"  # AND with a star (or OR with nothing): weekdays alone decide
    elif fields.dow_star or not fields.days_of_week:
        dow = "*"
    elif "*" in (dom, dow):
        dom = dow = "*"  # OR with a field that matches every day: every day
    return " ".join((
        listing(fields.minutes, _FIELDS[0]), listing(fields.hours, _FIELDS[1]), dom,
        listing(fields.months, _FIELDS[3]), dow,
    ))


def check(spec: str) -> CronFields | timedelta:
    """Check ``spec`` against the dialect: five-field sets, or an ``@every`` interval."""
    if not spec:
        raise ScheduleError("the schedule must not be empty")
    if "TZ=" in spec:
        raise ScheduleError(f"time zones (TZ= or CRON_TZ=) are not allowed in the schedule; "
                            f"{_ZONE_HINT}")
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return _parse_fields(_DESCRIPTORS[spec])
        if spec.startswith(_EVERY):
            try:
                nanos = parse_go_duration(spec[len(_EVERY):])
            except ScheduleError as err:
                raise ScheduleError(f"failed to parse the duration of {spec}: {err}") from None
            return timedelta(seconds=max(1, nanos // 1_000_000_000))
        raise ScheduleError(f"unrecognized descriptor {spec!r} (use @yearly, @annually, "
                            "@monthly, @weekly, @daily, @midnight, @hourly or @every <duration>)")
    return _parse_fields(spec)


@lru_cache(maxsize=4096)
def parse(spec: str, zone: tzinfo = UTC) -> Schedule:
    """Parse ``spec`` (see the module docstring) to a :class:`Schedule` read in ``zone``.

    Raises :class:`ScheduleError` with a user-facing message. Results are cached.
    """
    checked = check(spec)
    if isinstance(checked, timedelta):
        return EverySchedule(spec, zone, checked)
    return CronSchedule(spec, zone, checked)
