"""The CronJob sync refuses what validation bounds (a webhook may not be installed).

Never-satisfiable schedules, too-short ``@every`` intervals, overlong or non-canonical time
zones, and out-of-range integers each get one Warning naming the problem, Ready=False, and no
requeue: only an edit of the object brings it back. Same fixture as test_controller.py
(NOW = 12:00:30 UTC).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.cronjob.sync_fixture import KEY, Fixture, at, new_cronjob


@pytest.mark.parametrize(("spec", "event", "why"), [
    ({"schedule": "0 0 30 2 *"}, "InvalidSchedule", "day 30 never occurs in February"),
    ({"schedule": "0 0 31 4 *"}, "InvalidSchedule", "day 31 never occurs in April"),
    ({"schedule": "59 23 31 2 *"}, "InvalidSchedule", "day 31 never occurs in February"),
    ({"schedule": "@every 1s"}, "InvalidSchedule", "must be at least 1m"),
    ({"schedule": "@every 0s"}, "InvalidSchedule", "must be at least 1m"),
    ({"schedule": "@every -5m"}, "InvalidSchedule", "must be at least 1m"),
    ({"schedule": "1," * 100_000 + " * * * *"}, "InvalidSchedule",
     "spec.schedule: Too long: may not be more than 1024 characters"),
    ({"timeZone": "posix/Europe/Berlin"}, "UnknownTimeZone", "canonical IANA time zone name"),
    ({"timeZone": "right/UTC"}, "UnknownTimeZone", "canonical IANA time zone name"),
    ({"timeZone": "localtime"}, "UnknownTimeZone", "canonical IANA time zone name"),
    ({"timeZone": "posixrules"}, "UnknownTimeZone", "canonical IANA time zone name"),
    ({"timeZone": "Factory"}, "UnknownTimeZone", "canonical IANA time zone name"),
    ({"startingDeadlineSeconds": 1_000_000_000_000}, "InvalidSpec",
     "spec.startingDeadlineSeconds: Invalid value: 1000000000000: must be less than or "
     "equal to 31622400"),
    ({"successfulJobsHistoryLimit": 2**31 - 1}, "InvalidSpec",
     "must be less than or equal to 1000"),
], ids=["feb-30", "apr-31", "feb-31-2359", "every-1s", "every-0s", "every-negative",
        "overlong", "posix-zone", "right-zone", "localtime", "posixrules", "factory",
        "huge-deadline", "huge-history"])
def test_refused_spec_warns_once_and_is_not_ready_without_requeue(
        spec: dict[str, Any], event: str, why: str) -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(created=at("11:00"), **spec))

    result = f.sync()

    assert result is None  # no requeue loop
    assert f.created_jobs() == []
    assert f.events() == [("Warning", event)]
    [message] = f.messages(event)
    assert why in message
    ready = f.ready()
    assert (ready["status"], ready["reason"]) == ("False", event)
    assert why in ready["message"]
    assert f.status().get("nextScheduleTime") is None

    f.refresh()
    f.clear()
    assert f.sync() is None
    assert f.actions() == [] and f.events() == []


def test_feb_30_or_mondays_is_scheduled() -> None:
    # dom OR dow when both are restricted: "0 0 30 2 1" runs on Mondays in February.
    f = Fixture()
    f.add_cronjob(new_cronjob(schedule="0 0 30 2 1"))

    result = f.sync(KEY)

    assert f.events() == []
    assert f.ready()["status"] == "True"
    assert result is not None and result.requeue_after is not None
    assert f.status()["nextScheduleTime"] == "2027-02-01T00:00:00Z"  # the first Monday


def test_minute_interval_that_is_not_whole_minutes_runs() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(schedule="@every 90s", created=at("11:58")))

    f.sync()

    assert f.events() == [("Normal", "SuccessfulCreate")]
    assert [j["metadata"]["name"] for j in f.created_jobs()] == ["hello-29552399"]  # 11:59:30
