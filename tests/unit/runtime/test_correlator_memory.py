"""The event correlator's memory per involved object and reason, at its fill level.

A controller records about one distinct message per object and reason per minute ("Created job
<name>-<minute>"), so the correlator's similar-events records fill up to ``max_similar``
messages each and its de-duplication LRU fills with keys that are never seen again. That state
is bounded by design (LRUs of ``cache_size`` keys), but it is what a soak's RSS climbs for the
first ten minutes; it must stay small: the records keep fixed-size digests, not the messages
and long composite keys themselves.
"""

from __future__ import annotations

from datetime import UTC, datetime

from bench.memprofile import deep_size
from pyctrl.record.correlator import EventCorrelator
from pyctrl.testing import FakeClock

OBJECTS = 300
MINUTES = 12
REASONS = (("SuccessfulCreate", "Created job {job}"),
           ("SawCompletedJob", "Saw completed job: {job}, condition: Complete"),
           ("SuccessfulDelete", "Deleted job {job}"))


def _event(i: int, reason: str, message: str) -> dict[str, object]:
    name = f"soak-{i:05d}"
    return {"metadata": {"name": f"{name}.{i:x}", "namespace": "soak"},
            "involvedObject": {"apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
                               "name": name, "namespace": "soak",
                               "uid": f"0b6f1c2e-3f4a-4b5c-8d9e-{i:012d}",
                               "resourceVersion": "12345"},
            "type": "Normal", "reason": reason, "message": message,
            "source": {"component": "cronjob-controller"},
            "firstTimestamp": "2026-03-10T10:00:01Z", "lastTimestamp": "2026-03-10T10:00:01Z",
            "count": 1}


def _fill(correlator: EventCorrelator, clock: FakeClock) -> None:
    for minute in range(MINUTES):
        for i in range(OBJECTS):
            job = f"soak-{i:05d}-{29552281 + minute}"
            for reason, text in REASONS:
                result = correlator.correlate(_event(i, reason, text.format(job=job)))
                written = dict(result.event)
                written["metadata"] = {**result.event["metadata"], "resourceVersion": "9"}
                correlator.update_state(written, result.key)
        clock.step(60)


def test_correlator_state_at_fill_level_is_small() -> None:
    clock = FakeClock(datetime(2026, 3, 10, 10, 0, tzinfo=UTC))
    correlator = EventCorrelator(clock)
    _fill(correlator, clock)
    per_key = deep_size(correlator) / (OBJECTS * len(REASONS))
    # 900 similar-event records at max_similar messages, a full 4096-key dedup LRU and 300
    # spam buckets: about 4.5 KiB per (object, reason) when records held the messages.
    assert per_key < 2600, f"{per_key:.0f} bytes per (object, reason)"


def test_aggregation_still_counts_distinct_messages_after_the_fill() -> None:
    clock = FakeClock(datetime(2026, 3, 10, 10, 0, tzinfo=UTC))
    correlator = EventCorrelator(clock)
    _fill(correlator, clock)
    # past max_similar distinct messages in the window: the next one is combined
    result = correlator.correlate(_event(0, "SuccessfulCreate", "Created job x"))
    assert str(result.event["message"]).startswith("(combined from similar events): ")
    # a repeat of a message already written is de-duplicated (a patch with a higher count)
    fresh = EventCorrelator(clock)
    first = fresh.correlate(_event(1, "Normal", "same"))
    fresh.update_state({**first.event, "metadata": {"name": "e1", "resourceVersion": "5"}},
                       first.key)
    again = fresh.correlate(_event(1, "Normal", "same"))
    assert again.patch is not None and again.patch["count"] == 2
    assert again.event["metadata"]["name"] == "e1"
