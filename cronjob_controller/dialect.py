"""The Kubernetes cron dialect (robfig/cron ``ParseStandard``), checked by us.

Contract: :func:`check` accepts exactly five fields ``minute hour day-of-month month
day-of-week`` (``*``, ``?``, numbers, lists, ranges, steps, month and weekday names), the
descriptors ``@yearly``/``@annually``/``@monthly``/``@weekly``/``@daily``/``@midnight``/
``@hourly`` and ``@every <Go duration>``, and returns the expanded :class:`CronFields` or the
interval. Anything else raises :class:`ScheduleError` with a message naming the field and the
problem; 6/7 fields, ``L``, ``W``, ``#``, ``H`` and ``TZ=``/``CRON_TZ=`` get dedicated messages.
Stricter than robfig, because these could never run as the user meant: a schedule that can
never match (``0 0 30 2 *``: :func:`never_reason` says why) and ``@every`` shorter than
:data:`MIN_EVERY` (one minute; zero and negative included) are rejected too.

Cost: checking is linear in the schedule's length (messages that quote a field are only built
when raising; numbers longer than a few digits are refused before ``int()``), so the caller's
length limit (``api.MAX_SCHEDULE_LENGTH``) bounds it.
:func:`croniter_expr` renders fields as an explicit expression croniter evaluates exactly as
robfig would (croniter treats a full range such as ``1-31`` as ``*``; robfig does not): the
controller no longer runs croniter, which is the oracle of the differential unit test of
:mod:`cronjob_controller.cronmath` through it. The arithmetic on top lives in
:mod:`cronjob_controller.cronmath` (calendar) and :mod:`cronjob_controller.schedule` (zones).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from pyctrl.duration import parse_go_duration as _parse_go_duration

__all__ = [
    "MIN_EVERY",
    "CronFields",
    "ScheduleError",
    "check",
    "croniter_expr",
    "never_reason",
    "parse_go_duration",
    "satisfiable",
]

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
_MONTH_TITLES = ("January", "February", "March", "April", "May", "June", "July", "August",
                 "September", "October", "November", "December")
_MAX_DIGITS = 9  # Go's Atoi would accept more, but every value beyond 59 is out of range anyway
MIN_EVERY = timedelta(minutes=1)
"""The shortest ``@every`` interval: Job names have minute resolution (``<name>-<unix
minutes>``), so a shorter interval could never run more often; it would only churn status."""


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
    """Name the non-standard cron extensions Kubernetes rejects, for a clearer message.

    Called once per list item: the message (which quotes the whole field) is only built
    when raising, so checking stays linear in the field's length.
    """
    if _LAST.fullmatch(atom):
        problem = "'L' (last day)"
    elif _WEEKDAY.fullmatch(atom):
        problem = "'W' (nearest weekday)"
    elif _HASH.fullmatch(atom):
        problem = "'H' (hashed values)"
    else:
        return
    raise ScheduleError(f'{field.name} field "{text}": {problem} is not supported')


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
    digits = atom.lstrip("+").lstrip("0")
    if len(digits) > _MAX_DIGITS:
        # No field goes near this; and int() of thousands of digits is slow (and refused
        # beyond sys.get_int_max_str_digits() with a plain ValueError).
        raise ScheduleError(f'{field.name} field "{text}": "{atom}" is out of range')
    return int(digits or "0")


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


def parse_go_duration(text: str) -> int:
    """Nanoseconds in a Go ``time.ParseDuration`` string (:func:`pyctrl.duration.
    parse_go_duration`, Go's messages) raising :class:`ScheduleError`."""
    try:
        return _parse_go_duration(text)
    except ValueError as err:
        raise ScheduleError(str(err)) from None


# --------------------------------------------------------------------------------------
# Time arithmetic


def _join(items: list[str], last: str) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"


def never_reason(fields: CronFields) -> str | None:
    """Why ``fields`` can never match any time (None if they can), e.g. ``day 30 never
    occurs in February`` for ``0 0 30 2 *``.

    Day-of-month and day-of-week combine as in :meth:`CronFields.matches`: with OR (both
    restricted) any listed weekday makes the schedule run, so ``0 0 30 2 1`` runs on Mondays
    in February. February counts 29 days: ``0 0 29 2 *`` runs in leap years.
    """
    for values, name in ((fields.minutes, "minute"), (fields.hours, "hour"),
                         (fields.months, "month")):
        if not values:  # e.g. a field of only commas, which robfig accepts
            return f"the {name} field lists no value"
    if fields.dom_star:  # AND with every day of the month: the weekdays decide
        return None if fields.days_of_week else "the day-of-week field lists no value"
    if not fields.dow_star and fields.days_of_week:
        return None  # OR: every listed weekday occurs in every month
    if not fields.days_of_month:
        return "the day-of-month field lists no value" if fields.dow_star else (
            "neither the day-of-month nor the day-of-week field lists a value")
    months = sorted(fields.months)
    days = sorted(fields.days_of_month)
    if any(d <= _DAYS_IN_MONTH[m - 1] for m in months for d in days):
        return None
    return (f"day{'s' if len(days) > 1 else ''} {_join([str(d) for d in days], 'and')} "
            f"never occur{'' if len(days) > 1 else 's'} in "
            f"{_join([_MONTH_TITLES[m - 1] for m in months], 'or')}")


def satisfiable(fields: CronFields) -> bool:
    """False for schedules such as ``0 0 30 2 *`` that name a day no month has."""
    return never_reason(fields) is None


def croniter_expr(fields: CronFields) -> str:
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


@lru_cache(maxsize=4096)
def check(spec: str) -> CronFields | timedelta:
    """Check ``spec`` against the dialect: five-field sets, or an ``@every`` interval.

    Valid results are cached (both kinds are immutable): validation checks the schedule on
    every sync. An error is raised anew each time (it is not cached).
    """
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
            if nanos < MIN_EVERY.total_seconds() * 1_000_000_000:
                raise ScheduleError(
                    f"the interval of {spec} must be at least 1m: Jobs are named per minute, "
                    "so a run cannot start more often than once a minute")
            # Whole seconds, as upstream (robfig's Every truncates to the second).
            return timedelta(seconds=nanos // 1_000_000_000)
        raise ScheduleError(f"unrecognized descriptor {spec!r} (use @yearly, @annually, "
                            "@monthly, @weekly, @daily, @midnight, @hourly or @every <duration>)")
    fields = _parse_fields(spec)
    reason = never_reason(fields)
    if reason is not None:
        raise ScheduleError(f"{reason}, so the schedule would never run")
    return fields
