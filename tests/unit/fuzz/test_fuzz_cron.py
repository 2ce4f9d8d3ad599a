"""Fuzz: the schedule parser and the cron arithmetic.

* Parser: any text is either a schedule (five-field sets within their ranges, or an
  ``@every`` interval of at least a minute) or a :class:`ScheduleError` with a message; it
  never raises anything else. Inputs: arbitrary text, text over the cron alphabet, and
  grammar-built specs (lists, ranges, steps, names, descriptors).
* Arithmetic, differential: :func:`next_match`/:func:`last_match` agree with croniter (the
  oracle, through :func:`croniter_expr`) on grammar-built satisfiable schedules at wall
  times from 1970 to 2300.
* Zones and DST: in any IANA zone, at any instant from 1900 to 2100, ``next_after`` and
  ``latest_at_or_before`` of a :class:`CronSchedule` are consistent: the next time is after
  ``t``, is scheduled (its wall time matches, or it is the first instant after a DST gap in
  which a skipped wall minute matched), and nothing scheduled lies between ``t`` and it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, available_timezones

from croniter import croniter
from hypothesis import assume, example, given
from hypothesis import strategies as st

from cronjob_controller.cronmath import last_match, next_match
from cronjob_controller.dialect import CronFields, check, croniter_expr, satisfiable
from cronjob_controller.schedule import CronSchedule, ScheduleError, parse

MINUTE = timedelta(minutes=1)
ZONES = sorted(available_timezones())
MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]


def _atom(low: int, high: int, names: list[str]) -> st.SearchStrategy[str]:
    value = st.one_of(st.integers(low, high).map(str),
                      st.sampled_from(names) if names else st.nothing())
    step = st.integers(1, high - low + 1).map(lambda s: f"/{s}")
    rng = st.tuples(value, value).map(lambda ab: f"{ab[0]}-{ab[1]}")
    return st.tuples(st.one_of(st.just("*"), st.just("?"), value, rng),
                     st.one_of(st.just(""), step)).map("".join)


def _field(low: int, high: int, names: list[str] | None = None) -> st.SearchStrategy[str]:
    return st.lists(_atom(low, high, names or []), min_size=1, max_size=3).map(",".join)


specs = st.tuples(_field(0, 59), _field(0, 23), _field(1, 31), _field(1, 12, MONTHS),
                  _field(0, 6, DAYS)).map(" ".join)
descriptors = st.sampled_from(["@yearly", "@annually", "@monthly", "@weekly", "@daily",
                               "@midnight", "@hourly", "@every 1m", "@every 90s",
                               "@every 1h30m", "@every 59s", "@every -1m", "@every 1.5h",
                               "@every ", "@daily ", "@every 1d"])
cron_alphabet = st.text(alphabet="0123456789*?,-/ @LW#HjanfebsumoTZ=.hms\t", max_size=40)
walls = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2300, 12, 31))


def _satisfiable(spec: str) -> CronFields | None:
    try:
        fields = check(spec)
    except ScheduleError:
        return None
    return fields if isinstance(fields, CronFields) and satisfiable(fields) else None


@given(st.one_of(st.text(max_size=60), cron_alphabet, specs, descriptors))
@example("0 0 30 2 *")
@example("*/0 * * * *")
@example("1-0 * * * *")
@example("9" * 5000 + " * * * *")
@example("@every " + "9" * 5000 + "h")
def test_any_text_is_a_schedule_or_a_schedule_error(text: str) -> None:
    try:
        checked = check(text)
    except ScheduleError as err:
        assert str(err)
        return
    if isinstance(checked, timedelta):
        assert checked >= MINUTE
        return
    for values, low, high in ((checked.minutes, 0, 59), (checked.hours, 0, 23),
                              (checked.days_of_month, 1, 31), (checked.months, 1, 12),
                              (checked.days_of_week, 0, 6)):
        assert all(low <= v <= high for v in values)
    assert satisfiable(checked)
    assert parse(text, UTC).spec == text


@given(specs, walls)
@example("0 0 29 2 *", datetime(2096, 3, 1))
@example("59 23 31 12 *", datetime(1999, 12, 31, 23, 59))
def test_next_and_last_match_agree_with_croniter(spec: str, wall: datetime) -> None:
    fields = _satisfiable(spec)
    assume(fields is not None)
    assert fields is not None
    expr = croniter_expr(fields)
    nxt = next_match(fields, wall)
    if nxt is not None:
        assert nxt == croniter(expr, wall, day_or=True).get_next(datetime), (spec, wall)
    start = wall.replace(second=0, microsecond=0) + timedelta(seconds=1)
    last = last_match(fields, wall)
    if last is not None:
        assert last == croniter(expr, start, day_or=True).get_prev(datetime), (spec, wall)


def _scheduled(fields: CronFields, zone: ZoneInfo, m: datetime) -> bool:
    """Whether the UTC minute ``m`` is a scheduled instant (CRONJOB.md's DST rules)."""
    local = m.astimezone(zone)
    wall = local.replace(tzinfo=None)
    if fields.matches(wall) and local.fold == 0:
        return True
    prev_wall = (m - MINUTE).astimezone(zone).replace(tzinfo=None)
    skipped = prev_wall + MINUTE
    while skipped < wall:  # a gap: the clock jumped forward into m
        if fields.matches(skipped):
            return True
        skipped += MINUTE
    return False


@given(specs, st.sampled_from(ZONES),
       st.datetimes(min_value=datetime(1900, 1, 2), max_value=datetime(2100, 1, 1),
                    timezones=st.just(UTC)))
@example("30 2 * * *", "America/New_York", datetime(2024, 3, 10, 6, 0, tzinfo=UTC))
@example("30 1 * * *", "America/New_York", datetime(2024, 11, 3, 4, 0, tzinfo=UTC))
@example("15 2 * * *", "Australia/Lord_Howe", datetime(2024, 10, 5, 14, 0, tzinfo=UTC))
@example("* * * * *", "Africa/Abidjan", datetime(1912, 1, 1, 0, 0, tzinfo=UTC))
@example("*/5 * * * *", "Africa/Monrovia", datetime(1972, 1, 6, 23, 0, tzinfo=UTC))
def test_next_after_and_latest_at_or_before_are_consistent_in_any_zone(
    spec: str, zone_name: str, t: datetime
) -> None:
    fields = _satisfiable(spec)
    assume(fields is not None)
    zone = ZoneInfo(zone_name)
    schedule = parse(spec, zone)
    assert isinstance(schedule, CronSchedule)
    nxt = schedule.next_after(t)
    if nxt is None:
        return
    assert nxt.utcoffset() == timedelta(0)
    # A wall-clock minute; in UTC too, except under a local mean time with seconds in its
    # offset (Africa/Abidjan until 1912: -0:16:08, so its minutes start at :08 UTC).
    assert nxt > t and nxt.astimezone(zone).second == 0 and nxt.microsecond == 0
    assert _scheduled(schedule.fields, zone, nxt), (spec, zone_name, t, nxt)
    # Nothing scheduled in between: the latest time at or before the minute before it is
    # at or before t.
    before = schedule.latest_at_or_before(nxt - MINUTE)
    assert before is None or before <= t, (spec, zone_name, t, nxt, before)
    assert schedule.latest_at_or_before(nxt) == nxt
    whole_minutes = all(x.astimezone(zone).second == x.second for x in (t, nxt))
    if whole_minutes and nxt - t <= timedelta(hours=3):  # walk every minute in between
        m = t.replace(second=0, microsecond=0) + MINUTE
        while m < nxt:
            assert not _scheduled(schedule.fields, zone, m), (spec, zone_name, t, m, nxt)
            m += MINUTE
