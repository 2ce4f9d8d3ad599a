"""Property: most_recent / latest_at_or_before agree with a brute-force walk over minutes.

The brute force is written from the DST rules in CRONJOB.md, independently of schedule.py's
mapping: walk every UTC minute m in (anchor, now]; m is a scheduled time when its wall time
matches and it is the first occurrence of that wall time (fold == 0), or when the clock jumped
forward into m and one of the skipped wall minutes matches.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cronjob_controller.schedule import TOO_MANY_MISSED, CronFields, CronSchedule, parse

MINUTE = timedelta(minutes=1)


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# (zone, an instant at or near one of its 2024 transitions): windows straddle the gap/overlap.
ZONE_TRANSITIONS = [
    (ZoneInfo("America/New_York"), _utc("2024-03-10T07:00")),  # 02:00 EST -> 03:00 EDT
    (ZoneInfo("America/New_York"), _utc("2024-11-03T06:00")),  # 02:00 EDT -> 01:00 EST
    (ZoneInfo("Europe/Berlin"), _utc("2024-03-31T01:00")),  # 02:00 CET -> 03:00 CEST
    (ZoneInfo("Europe/Berlin"), _utc("2024-10-27T01:00")),  # 03:00 CEST -> 02:00 CET
    (ZoneInfo("Australia/Lord_Howe"), _utc("2024-04-06T15:00")),  # 30-minute overlap
    (ZoneInfo("Australia/Lord_Howe"), _utc("2024-10-05T15:30")),  # 30-minute gap
    (ZoneInfo("UTC"), _utc("2024-02-28T20:00")),
    (ZoneInfo("Asia/Kolkata"), _utc("2024-12-31T20:00")),
]

minute_field = st.sampled_from(["*", "*/7", "0,30", "15", "10-20/5", "*/2", "59", "*/20"])
hour_field = st.sampled_from(["*", "1", "1-3", "2", "*/5", "0,2,23", "2-3", "1,2"])
dom_field = st.sampled_from(["*", "?", "1", "3,31", "*/10", "27-31", "10"])
month_field = st.sampled_from(["*", "1-6", "mar,oct,nov", "10-12", "feb", "*/3"])
dow_field = st.sampled_from(["*", "0", "mon-fri", "sun,sat", "*/3", "6"])
specs = st.tuples(minute_field, hour_field, dom_field, month_field, dow_field).map(" ".join)


def brute_force(fields: CronFields, zone: ZoneInfo, anchor: datetime,
                now: datetime) -> list[datetime]:
    times = []
    m = anchor.replace(second=0, microsecond=0) + MINUTE
    while m <= now:
        local = m.astimezone(zone)
        wall = local.replace(tzinfo=None)
        prev_wall = (m - MINUTE).astimezone(zone).replace(tzinfo=None)
        scheduled = fields.matches(wall) and local.fold == 0
        skipped = prev_wall + MINUTE
        while not scheduled and skipped < wall:  # a gap: the clock jumped forward into m
            scheduled = fields.matches(skipped)
            skipped += MINUTE
        if scheduled:
            times.append(m)
        m += MINUTE
    return times


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=specs,
    zone_and_base=st.sampled_from(ZONE_TRANSITIONS),
    start_offset=st.integers(min_value=-4 * 60 * 60, max_value=2 * 60 * 60),
    window=st.integers(min_value=0, max_value=8 * 60 * 60),
)
def test_most_recent_matches_brute_force(
    spec: str, zone_and_base: tuple[ZoneInfo, datetime], start_offset: int, window: int
) -> None:
    zone, base = zone_and_base
    schedule = parse(spec, zone)
    assert isinstance(schedule, CronSchedule)
    anchor = base + timedelta(seconds=start_offset)
    now = anchor + timedelta(seconds=window)
    expected = brute_force(schedule.fields, zone, anchor, now)

    t, missed = schedule.most_recent(anchor, now)

    assert t == (expected[-1] if expected else None)
    assert missed == min(len(expected), TOO_MANY_MISSED + 1)
    if expected:
        assert schedule.latest_at_or_before(now) == expected[-1]
        assert schedule.next_after(anchor) == expected[0]
        if len(expected) > 1:
            assert schedule.next_after(expected[-2]) == expected[-1]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=specs,
    zone_and_base=st.sampled_from(ZONE_TRANSITIONS),
    offsets=st.lists(st.integers(min_value=-3 * 60 * 60, max_value=3 * 60 * 60),
                     min_size=1, max_size=12),
)
def test_next_after_memo_answers_as_a_fresh_walk(
    spec: str, zone_and_base: tuple[ZoneInfo, datetime], offsets: list[int]
) -> None:
    """One schedule asked many times (its memo of intervals in play, boundaries included:
    each answer is asked again, and just before it) answers as a fresh schedule does."""
    zone, base = zone_and_base
    memoised = parse(spec, zone)
    assert isinstance(memoised, CronSchedule)
    for offset in offsets:
        t = base + timedelta(seconds=offset)
        answer = memoised.next_after(t)
        for probe in (t, *((answer - timedelta(microseconds=1), answer) if answer else ())):
            fresh = CronSchedule(spec, zone, memoised.fields)
            assert memoised.next_after(probe) == fresh.next_after(probe), probe
