"""schedule.py: the dialect, zone/DST arithmetic, missed-run counting, deadlines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from cronjob_controller import schedule as sched_mod
from cronjob_controller.schedule import (
    TOO_MANY_MISSED,
    CronFields,
    CronSchedule,
    EverySchedule,
    ScheduleError,
    deadline_window_start,
    parse,
    parse_go_duration,
    within_starting_deadline,
)

NY = ZoneInfo("America/New_York")
BERLIN = ZoneInfo("Europe/Berlin")


def at(text: str) -> datetime:
    """An aware datetime from ISO text (with offset, or UTC when it has none)."""
    t = datetime.fromisoformat(text)
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def nexts(spec: str, zone: ZoneInfo | None, start: str, n: int) -> list[str]:
    """The next ``n`` scheduled times after ``start``, as ISO text in ``zone``."""
    s = parse(spec, zone or UTC)
    t = at(start)
    out = []
    for _ in range(n):
        nxt = s.next_after(t)
        assert nxt is not None
        assert nxt.tzinfo is UTC
        out.append(nxt.astimezone(zone or UTC).isoformat())
        t = nxt
    return out


# ---------------------------------------------------------------------------------------
# Dialect


@pytest.mark.parametrize("spec", [
    "* * * * *", "*/5 * * * *", "0 9-17 * * mon-fri", "0 0 1,15 * *", "0 0 * JAN,jul *",
    "0 0 ? * *", "0 0 * * ?", "5/15 * * * *", "0 0 * * SUN", "0 0 * * 0-6", "0 0 1 jan-jun/2 *",
    "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
    "@every 90m", "@every 1h30m", "@every 1.5h", "@every 60s", "  0  0 * * *  ", "0\t0 * * *",
    "1,,2 * * * *", "+5 * * * *", "0 0 29 2 *", "0 0 30 2 1",
])
def test_accepts_the_kubernetes_dialect(spec: str) -> None:
    parse(spec)


@pytest.mark.parametrize(("spec", "message"), [
    ("", "must not be empty"),
    ("* * * *", "expected exactly 5 fields (minute hour day-of-month month day-of-week), found 4"),
    ("0 * * * * *", "found 6: seconds and year fields are not supported"),
    ("0 0 0 * * * 2024", "found 7: seconds and year fields are not supported"),
    ("0 0 L * *", "day-of-month field \"L\": 'L' (last day) is not supported"),
    ("0 0 * * 5L", "day-of-week field \"5L\": 'L' (last day) is not supported"),
    ("0 0 LW * *", "'L' (last day) is not supported"),
    ("0 0 15W * *", "day-of-month field \"15W\": 'W' (nearest weekday) is not supported"),
    ("0 0 * * 5#3", "'#' (nth weekday of the month) is not supported"),
    ("H * * * *", "minute field \"H\": 'H' (hashed values) is not supported"),
    ("H/15 * * * *", "'H' (hashed values) is not supported"),
    ("0 H(0-5) * * *", "'H' (hashed values) is not supported"),
    ("TZ=UTC 0 0 * * *", "not allowed in the schedule; set spec.timeZone instead"),
    ("CRON_TZ=Europe/Berlin 0 0 * * *", "set spec.timeZone instead"),
    ("61 * * * *", 'minute field "61": 61 is above the maximum 59'),
    ("* 24 * * *", 'hour field "24": 24 is above the maximum 23'),
    ("* * 0 * *", 'day-of-month field "0": 0 is below the minimum 1'),
    ("* * 32 * *", "32 is above the maximum 31"),
    ("* * * 13 *", 'month field "13": 13 is above the maximum 12'),
    ("* * * * 7", "7 is above the maximum 6 (use 0 for Sunday)"),
    ("5-1 * * * *", "range start 5 is beyond its end 1"),
    ("*/0 * * * *", "the step must be a positive number"),
    ("1-2-3 * * * *", 'too many hyphens in "1-2-3"'),
    ("*/2/3 * * * *", 'too many slashes in "*/2/3"'),
    ("x * * * *", '"x" is not a number'),
    ("0 0 * foo *", '"foo" is neither a number nor a month name'),
    ("0 0 * * mon-xyz", '"xyz" is neither a number nor a day-of-week name'),
    ("0 jan * * *", '"jan" is not a number'),  # names only in month / day-of-week
    ("@every 1d", 'unknown unit "d" in duration "1d"'),
    ("@every 5", 'missing unit in duration "5"'),
    ("@every ", 'invalid duration ""'),
    ("@every", "unrecognized descriptor '@every'"),
    ("@reboot", "unrecognized descriptor '@reboot'"),
    ("@DAILY", "unrecognized descriptor"),  # descriptors are case-sensitive, as in robfig
    # Stricter than robfig: what could never run as meant.
    ("0 0 30 2 *", "day 30 never occurs in February, so the schedule would never run"),
    ("0 0 31 4 *", "day 31 never occurs in April"),
    ("59 23 31 2 *", "day 31 never occurs in February"),
    ("0 0 , * *", "the day-of-month field lists no value"),  # robfig: an empty list
    ("@every 30s", "the interval of @every 30s must be at least 1m"),
    ("@every 59.999s", "must be at least 1m"),
    ("@every 0s", "must be at least 1m"),
    ("@every 0", "must be at least 1m"),
    ("@every -1h", "must be at least 1m"),
])
def test_rejects_with_a_clear_message(spec: str, message: str) -> None:
    with pytest.raises(ScheduleError) as err:
        parse(spec)
    assert message in str(err.value)


def test_fields_follow_robfig_ranges_steps_and_names() -> None:
    s = parse("5/15 9-17/4 1,15 jan-mar/2 mon-fri")
    assert isinstance(s, CronSchedule)
    f = s.fields
    assert f.minutes == {5, 20, 35, 50}
    assert f.hours == {9, 13, 17}
    assert f.days_of_month == {1, 15}
    assert f.months == {1, 3}
    assert f.days_of_week == {1, 2, 3, 4, 5}
    assert not f.dom_star and not f.dow_star


@pytest.mark.parametrize(("dow", "star"), [("*", True), ("?", True), ("*/1", True),
                                             ("*/2", False), ("0-6", False), ("1", False)])
def test_star_bit_as_robfig(dow: str, star: bool) -> None:
    s = parse(f"0 0 * * {dow}")
    assert isinstance(s, CronSchedule)
    assert s.fields.dow_star is star


@pytest.mark.parametrize(("text", "nanos"), [
    ("90m", 90 * 60 * 10**9), ("1h30m", 90 * 60 * 10**9), ("1.5h", 90 * 60 * 10**9),
    ("300ms", 300 * 10**6), ("2us", 2000), ("2\u00b5s", 2000), ("0", 0), ("-1s", -(10**9)),
    ("+2s", 2 * 10**9), (".5s", 5 * 10**8), ("1h1m1s1ms", 3661001 * 10**6),
])
def test_go_duration(text: str, nanos: int) -> None:
    assert parse_go_duration(text) == nanos


@pytest.mark.parametrize(("spec", "seconds"), [
    ("@every 90m", 5400), ("@every 1m30.9s", 90), ("@every 1m0.5s", 60), ("@every 61s", 61),
])
def test_every_interval_is_whole_seconds_at_least_one_minute(spec: str, seconds: int) -> None:
    s = parse(spec)
    assert isinstance(s, EverySchedule)
    assert s.interval == timedelta(seconds=seconds)


def test_descriptors_expand_like_robfig() -> None:
    assert nexts("@weekly", None, "2024-01-03T12:00", 2) == [
        "2024-01-07T00:00:00+00:00", "2024-01-14T00:00:00+00:00"]  # Sundays
    assert nexts("@yearly", None, "2024-06-01T00:00", 1) == ["2025-01-01T00:00:00+00:00"]
    assert nexts("@monthly", None, "2024-01-31T00:00", 1) == ["2024-02-01T00:00:00+00:00"]
    assert nexts("@hourly", None, "2024-01-01T00:00:01", 1) == ["2024-01-01T01:00:00+00:00"]


def test_parse_is_cached_per_spec_and_zone() -> None:
    assert parse("*/7 * * * *", NY) is parse("*/7 * * * *", NY)
    assert parse("*/7 * * * *", NY) is not parse("*/7 * * * *", BERLIN)


# ---------------------------------------------------------------------------------------
# Calendar rules


def test_day_of_month_31_only_in_long_months() -> None:
    assert nexts("0 0 31 * *", None, "2024-01-31T00:00", 6) == [
        "2024-03-31T00:00:00+00:00", "2024-05-31T00:00:00+00:00", "2024-07-31T00:00:00+00:00",
        "2024-08-31T00:00:00+00:00", "2024-10-31T00:00:00+00:00", "2024-12-31T00:00:00+00:00"]


def test_february_29_only_in_leap_years() -> None:
    assert nexts("0 0 29 2 *", None, "2024-03-01T00:00", 2) == [
        "2028-02-29T00:00:00+00:00", "2032-02-29T00:00:00+00:00"]
    # 2100 is not a leap year.
    assert nexts("0 0 29 2 *", None, "2096-03-01T00:00", 1) == ["2104-02-29T00:00:00+00:00"]


def test_impossible_date_never_fires() -> None:
    # parse() refuses these; a CronSchedule built from such fields still never fires.
    every = frozenset(range(60))
    feb30 = CronFields(every, every, frozenset({30}), frozenset({2}), frozenset(range(7)),
                       dom_star=False, dow_star=True)
    s = CronSchedule("0 0 30 2 *", UTC, feb30)
    assert s.next_after(at("2024-01-01T00:00")) is None
    assert s.latest_at_or_before(at("2024-01-01T00:00")) is None
    assert s.most_recent(at("2000-01-01T00:00"), at("2024-01-01T00:00")) == (None, 0)


def test_every_interval_not_a_whole_minute_gives_one_run_per_minute() -> None:
    # 90 s: runs at :00:30, :02:00, :03:30, ... each in its own minute, so Job names
    # (<name>-<unix minutes>) never collide.
    s = parse("@every 90s")
    anchor = at("2024-01-01T00:00:00")
    t, minutes = anchor, set()
    for _ in range(100):
        nxt = s.next_after(t, anchor=anchor)
        assert nxt is not None
        minutes.add(int(nxt.timestamp()) // 60)
        t = nxt
    assert len(minutes) == 100


def test_day_of_month_or_day_of_week_when_both_restricted() -> None:
    # The 13th, or any Friday (September 2024: Fridays 6, 13, 20, 27; Oct 13 is a Sunday).
    assert [t[:10] for t in nexts("0 0 13 * 5", None, "2024-09-01T00:00", 8)] == [
        "2024-09-06", "2024-09-13", "2024-09-20", "2024-09-27", "2024-10-04", "2024-10-11",
        "2024-10-13", "2024-10-18"]


@pytest.mark.parametrize(("spec", "days"), [
    ("0 0 * * 1", ["2024-01-08", "2024-01-15"]),  # star day-of-month: AND, Mondays only
    ("0 0 ? * 1", ["2024-01-08", "2024-01-15"]),
    ("0 0 */1 * 1", ["2024-01-08", "2024-01-15"]),  # */1 keeps the star bit
    ("0 0 13 * *", ["2024-01-13", "2024-02-13"]),
    ("0 0 1-31 * 1", ["2024-01-02", "2024-01-03"]),  # not a star: OR, so every day
    ("0 0 */10 * 1", ["2024-01-08", "2024-01-11"]),  # 1,11,21,31 or Mondays
])
def test_day_matching_follows_robfig_star_rule(spec: str, days: list[str]) -> None:
    assert [t[:10] for t in nexts(spec, None, "2024-01-01T00:00", 2)] == days  # Jan 1 = Mon


# ---------------------------------------------------------------------------------------
# Zones and DST


def test_schedule_is_read_in_its_zone_and_returned_in_utc() -> None:
    start = at("2024-06-01T12:00")
    assert parse("0 9 * * *").next_after(start) == at("2024-06-02T09:00")
    assert parse("0 9 * * *", ZoneInfo("Asia/Tokyo")).next_after(start) == at("2024-06-02T00:00")
    assert parse("0 9 * * *", ZoneInfo("Asia/Kolkata")).next_after(start) == at(
        "2024-06-02T03:30")
    assert parse("0 9 * * *", NY).next_after(start) == at("2024-06-01T13:00")  # 09:00 EDT


@pytest.mark.parametrize(("spec", "zone", "start", "expected"), [
    # New York springs forward 2024-03-10 02:00 EST -> 03:00 EDT.
    ("30 2 * * *", NY, "2024-03-09T12:00-05:00",
     ["2024-03-10T03:00:00-04:00", "2024-03-11T02:30:00-04:00"]),
    ("*/15 2 * * *", NY, "2024-03-10T01:00-05:00",
     ["2024-03-10T03:00:00-04:00", "2024-03-11T02:00:00-04:00", "2024-03-11T02:15:00-04:00"]),
    ("* * * * *", NY, "2024-03-10T01:58-05:00",
     ["2024-03-10T01:59:00-05:00", "2024-03-10T03:00:00-04:00", "2024-03-10T03:01:00-04:00"]),
    # Berlin springs forward 2024-03-31 02:00 CET -> 03:00 CEST.
    ("30 2 * * *", BERLIN, "2024-03-30T12:00+01:00",
     ["2024-03-31T03:00:00+02:00", "2024-04-01T02:30:00+02:00"]),
    ("0 2 * * 0", BERLIN, "2024-03-30T12:00+01:00",
     ["2024-03-31T03:00:00+02:00", "2024-04-07T02:00:00+02:00"]),
])
def test_skipped_time_runs_once_at_first_instant_after_the_gap(
    spec: str, zone: ZoneInfo, start: str, expected: list[str]
) -> None:
    assert nexts(spec, zone, start, len(expected)) == expected


@pytest.mark.parametrize(("spec", "zone", "start", "expected"), [
    # New York falls back 2024-11-03 02:00 EDT -> 01:00 EST: 01:xx happens twice.
    ("30 1 * * *", NY, "2024-11-02T12:00-04:00",
     ["2024-11-03T01:30:00-04:00", "2024-11-04T01:30:00-05:00"]),
    ("*/20 * * * *", NY, "2024-11-03T01:10-04:00",
     ["2024-11-03T01:20:00-04:00", "2024-11-03T01:40:00-04:00", "2024-11-03T02:00:00-05:00"]),
    ("0 * * * *", NY, "2024-11-03T00:10-04:00",
     ["2024-11-03T01:00:00-04:00", "2024-11-03T02:00:00-05:00"]),
    # Berlin falls back 2024-10-27 03:00 CEST -> 02:00 CET: 02:xx happens twice.
    ("30 2 * * *", BERLIN, "2024-10-26T12:00+02:00",
     ["2024-10-27T02:30:00+02:00", "2024-10-28T02:30:00+01:00"]),
    ("0 * * * *", BERLIN, "2024-10-27T01:30+02:00",
     ["2024-10-27T02:00:00+02:00", "2024-10-27T03:00:00+01:00"]),
])
def test_repeated_time_runs_once_at_its_first_occurrence(
    spec: str, zone: ZoneInfo, start: str, expected: list[str]
) -> None:
    assert nexts(spec, zone, start, len(expected)) == expected


def test_from_inside_the_second_pass_of_a_repeated_hour() -> None:
    s = parse("*/20 * * * *", NY)
    assert isinstance(s, CronSchedule)
    inside = at("2024-11-03T01:30-05:00")  # 06:30Z, second pass of 01:xx
    assert s.next_after(inside) == at("2024-11-03T02:00-05:00")
    assert s.latest_at_or_before(inside) == at("2024-11-03T01:40-04:00")
    assert s.most_recent(at("2024-11-03T01:10-04:00"), inside) == (
        at("2024-11-03T01:40-04:00"), 2)


def test_every_ignores_zone_and_dst() -> None:
    s = parse("@every 1h", NY)
    anchor = at("2024-11-03T04:00")  # 00:00 EDT
    assert s.most_recent(anchor, at("2024-11-03T08:30")) == (at("2024-11-03T08:00"), 4)


# ---------------------------------------------------------------------------------------
# most_recent: the anchor window, exactness, missed counts


@pytest.mark.parametrize(("anchor", "now", "expected"), [
    ("10:00", "10:05", ("10:05", 1)),  # anchor excluded, now included
    ("10:00", "10:04:59", (None, 0)),
    ("10:00:01", "10:10", ("10:10", 2)),
    ("09:59:59", "10:00", ("10:00", 1)),
    ("10:00", "10:00", (None, 0)),
    ("10:05", "10:00", (None, 0)),  # now before anchor
    ("10:00", "11:00:30", ("11:00", 12)),
])
def test_most_recent_is_the_latest_time_in_anchor_to_now(
    anchor: str, now: str, expected: tuple[str | None, int]
) -> None:
    day = "2024-01-01T"
    got = parse("*/5 * * * *").most_recent(at(day + anchor), at(day + now))
    want_t = at(day + expected[0]) if expected[0] else None
    assert got == (want_t, expected[1])


def test_missed_count_boundary_exactly_100_is_not_too_many() -> None:
    anchor = at("2024-01-01T00:00")
    t, missed = parse("* * * * *").most_recent(anchor, anchor + timedelta(minutes=100))
    assert (t, missed) == (anchor + timedelta(minutes=100), 100)
    assert not missed > TOO_MANY_MISSED


def test_missed_count_boundary_101_is_too_many_and_still_the_latest() -> None:
    anchor = at("2024-01-01T00:00")
    now = anchor + timedelta(minutes=101, seconds=30)
    t, missed = parse("* * * * *").most_recent(anchor, now)
    assert (t, missed) == (anchor + timedelta(minutes=101), 101)
    assert missed > TOO_MANY_MISSED


def test_every_missed_count_boundary() -> None:
    s = parse("@every 90m")
    anchor = at("2024-01-01T00:00:30.5")
    assert s.most_recent(anchor, anchor + 100 * timedelta(minutes=90)) == (
        at("2024-01-01T00:00:30") + 100 * timedelta(minutes=90), 100)
    t, missed = s.most_recent(anchor, anchor + 101 * timedelta(minutes=90))
    assert t == at("2024-01-01T00:00:30") + 101 * timedelta(minutes=90)
    assert missed == 101


def test_every_times_are_anchor_plus_k_intervals() -> None:
    s = parse("@every 90m")
    anchor = at("2024-01-01T00:00:30")
    assert s.most_recent(anchor, at("2024-01-01T05:00")) == (at("2024-01-01T04:30:30"), 3)
    assert s.next_after(at("2024-01-01T05:00"), anchor=anchor) == at("2024-01-01T06:00:30")
    assert s.next_after(at("2024-01-01T05:00:00.7")) == at("2024-01-01T06:30")  # robfig Next
    assert s.most_recent(anchor, at("2024-01-01T01:30:29")) == (None, 0)


def test_very_old_anchor_is_exact_without_walking_every_minute(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = 0
    real = CronSchedule.next_after

    def counting(self: CronSchedule, t: datetime, anchor: datetime | None = None) -> (
            datetime | None):
        nonlocal calls
        calls += 1
        return real(self, t, anchor)

    monkeypatch.setattr(CronSchedule, "next_after", counting)
    s = parse("*/7 3 * * *", NY)
    t, missed = s.most_recent(at("2000-01-01T00:00"), at("2024-11-03T09:00"))
    assert t == at("2024-11-03T03:56-05:00")
    assert missed == TOO_MANY_MISSED + 1
    assert calls <= TOO_MANY_MISSED + 1


def test_naive_datetimes_are_rejected() -> None:
    with pytest.raises(ValueError, match="naive"):
        parse("* * * * *").next_after(datetime(2024, 1, 1))
    with pytest.raises(ValueError, match="naive"):
        within_starting_deadline(datetime(2024, 1, 1), at("2024-01-01T00:00"), 10)


# ---------------------------------------------------------------------------------------
# startingDeadlineSeconds


@pytest.mark.parametrize(("now", "deadline", "allowed"), [
    ("10:00:29.999999", 30, True),  # just inside
    ("10:00:30", 30, False),  # exactly at the deadline: too late
    ("10:00:31", 30, False),
    ("10:00", 0, False),  # 0: never start a run, even on time
    ("10:00", None, True),
    ("23:00", None, True),
])
def test_starting_deadline(now: str, deadline: int | None, allowed: bool) -> None:
    scheduled = at("2024-01-01T10:00")
    assert within_starting_deadline(scheduled, at("2024-01-01T" + now), deadline) is allowed


@pytest.mark.parametrize("deadline", [10**12, 8 * 10**13, 2**63 - 1, 10**40])
def test_huge_starting_deadline_never_overflows(deadline: int) -> None:
    # An object stored before the CRD's maximum may hold any int64: a timedelta of that
    # many seconds overflows (limit ~8.6e13), the comparison must not.
    scheduled = at("2024-01-01T10:00")
    assert within_starting_deadline(scheduled, at("9999-12-31T23:59"), deadline) is True
    assert within_starting_deadline(scheduled, at("2024-01-01T10:00"), deadline) is True
    earliest = deadline_window_start(at("2024-01-01T10:00"), deadline)
    assert earliest == datetime.min.replace(tzinfo=UTC) + timedelta(days=1)
    # and such a window start is usable as an anchor in any zone
    assert parse("*/5 * * * *", NY).most_recent(earliest, at("2024-01-01T10:00"))[0] == (
        at("2024-01-01T10:00"))


@pytest.mark.parametrize(("deadline", "start"), [
    (0, "2024-01-01T10:00:30"), (-5, "2024-01-01T10:00:30"), (30, "2024-01-01T10:00"),
    (31_622_400, "2022-12-31T10:00:30"),  # 366 days
])
def test_deadline_window_start(deadline: int, start: str) -> None:
    assert deadline_window_start(at("2024-01-01T10:00:30"), deadline) == at(start)


@pytest.mark.parametrize("spec", ["*/5 * * * *", "0 0 29 2 *", "@every 90m"])
@pytest.mark.parametrize("zone", [UTC, NY, ZoneInfo("Asia/Tokyo")])
@pytest.mark.parametrize("edge", [datetime.min, datetime(1, 1, 2), datetime(9999, 12, 31, 23),
                                  datetime.max])
def test_times_at_the_ends_of_the_calendar_mean_none_not_an_exception(
    spec: str, zone: ZoneInfo, edge: datetime,
) -> None:
    # A hand-written status may hold lastScheduleTime 0001-01-01 or 9999-12-31.
    s = parse(spec, zone)
    edge = edge.replace(tzinfo=UTC)
    now = at("2024-01-01T10:00:30")
    t, _ = s.most_recent(edge, now)
    assert t is None or edge < t <= now
    nxt = s.next_after(edge, anchor=edge)
    assert nxt is None or nxt > edge
    if isinstance(s, CronSchedule):
        latest = s.latest_at_or_before(edge)
        assert latest is None or latest <= edge


def test_module_exports() -> None:
    assert set(sched_mod.__all__) >= {"parse", "Schedule", "ScheduleError",
                                      "within_starting_deadline", "deadline_window_start",
                                      "TOO_MANY_MISSED"}
