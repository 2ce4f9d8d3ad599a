"""The CronJob sync: history cleanup, suspend, deletion, concurrency policies, deadlines.

Same fixture as test_controller.py: NOW = 12:00:30 UTC, schedule ``*/5 * * * *`` unless a
test says otherwise, so the 12:00 run (Job ``hello-29552400``) is the one due.
"""

from __future__ import annotations

from typing import Any

import pytest

from cronjob_controller.api import CRONJOBS
from cronjob_controller.controller import REQUEUE_SLACK_SECONDS
from tests.unit.cronjob.sync_fixture import NAMESPACE, Fixture, at, fmt, new_cronjob, new_job

NOON = at("12:00")
NOON_JOB = "hello-29552400"
STATUS_PATCH = ("patch", "cronjobs", "hello", "status")
CREATE_NOON = ("create", "jobs", NOON_JOB, None)
UP_TO_DATE = {"lastScheduleTime": fmt(NOON)}  # nothing is due at 12:00:30


def delete(name: str) -> tuple[str, str, str, None]:
    return ("delete", "jobs", name, None)


def background(job: dict[str, Any]) -> dict[str, object]:
    return {"propagation_policy": "Background",
            "preconditions": {"uid": job["metadata"]["uid"]}}


# -- history cleanup ---------------------------------------------------------------------


def test_cleanup_deletes_oldest_complete_jobs_beyond_the_limit() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), status=UP_TO_DATE,
                                   successfulJobsHistoryLimit=2))
    jobs = [f.add_job(new_job(cj, at(t), finished="Complete"))
            for t in ("11:55", "11:40", "11:50", "11:45")]

    f.sync()

    oldest, second = jobs[1], jobs[3]
    assert f.actions() == [delete(oldest["metadata"]["name"]),
                           delete(second["metadata"]["name"]), STATUS_PATCH]
    assert f.deletes() == [(oldest["metadata"]["name"], background(oldest)),
                           (second["metadata"]["name"], background(second))]
    assert f.events() == [("Normal", "SuccessfulDelete"), ("Normal", "SuccessfulDelete")]
    assert sorted(f.job_names()) == ["hello-29552390", "hello-29552395"]


def test_cleanup_orders_by_start_time_not_by_schedule() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), status=UP_TO_DATE,
                                   successfulJobsHistoryLimit=1))
    late_start = f.add_job(new_job(cj, at("11:45"), finished="Complete", started=at("11:58")))
    early_start = f.add_job(new_job(cj, at("11:50"), finished="Complete", started=at("11:50")))

    f.sync()

    assert [name for name, _ in f.deletes()] == [early_start["metadata"]["name"]]
    assert f.job_names() == [late_start["metadata"]["name"]]


def test_cleanup_counts_complete_and_failed_jobs_separately() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), status=UP_TO_DATE))  # limits 3 and 1
    for t in ("11:35", "11:40", "11:45"):
        f.add_job(new_job(cj, at(t), finished="Complete"))
    old_failure = f.add_job(new_job(cj, at("11:50"), finished="Failed"))
    f.add_job(new_job(cj, at("11:55"), finished="Failed"))

    f.sync()

    assert f.actions() == [delete(old_failure["metadata"]["name"]), STATUS_PATCH]
    assert f.events() == [("Normal", "SuccessfulDelete")]


def test_cleanup_with_zero_limits_keeps_only_running_jobs() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), status=UP_TO_DATE,
                                   successfulJobsHistoryLimit=0, failedJobsHistoryLimit=0))
    f.add_job(new_job(cj, at("11:50"), finished="Complete"))
    f.add_job(new_job(cj, at("11:55"), finished="Failed"))
    running = f.add_job(new_job(cj, NOON))

    f.sync()

    assert [v for v, *_ in f.actions()] == ["delete", "delete", "patch"]
    assert f.job_names() == [running["metadata"]["name"]]


def test_cleanup_leaves_jobs_of_others_alone() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), status=UP_TO_DATE,
                                   successfulJobsHistoryLimit=0))
    f.add_job(new_job(cj, at("11:50"), finished="Complete", owner_uid="uid-of-an-older-hello"))
    f.add_job(new_job(cj, at("11:55"), finished="Complete", owner_uid=""))

    f.sync()

    assert f.deletes() == []
    assert len(f.job_names()) == 2


def test_cleanup_runs_even_when_suspended() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), suspend=True,
                                   successfulJobsHistoryLimit=1))
    old = f.add_job(new_job(cj, at("11:50"), finished="Complete"))
    f.add_job(new_job(cj, at("11:55"), finished="Complete"))

    f.sync()

    assert f.actions() == [delete(old["metadata"]["name"]), STATUS_PATCH]
    assert f.created_jobs() == []


def test_second_cleanup_sync_deletes_nothing_more() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), status=UP_TO_DATE,
                                   successfulJobsHistoryLimit=1))
    for t in ("11:45", "11:50", "11:55"):
        f.add_job(new_job(cj, at(t), finished="Complete"))
    f.sync()
    f.refresh()
    f.clear()

    f.sync()

    assert f.actions() == []


# -- suspend and deletion ----------------------------------------------------------------


def test_suspended_cronjob_creates_nothing_and_says_suspended() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(suspend=True))  # 12:00 would be due

    result = f.sync()

    assert f.actions() == [STATUS_PATCH]
    assert f.events() == []
    assert result is None  # an unsuspend is an object change: it brings the key back
    ready = f.ready()
    assert (ready["status"], ready["reason"]) == ("True", "Suspended")


def test_unsuspending_starts_the_due_run() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(suspend=True))
    f.settle()
    f.client.patch(CRONJOBS, "hello", {"spec": {"suspend": False}}, NAMESPACE)
    f.refresh()
    f.clear()

    f.sync()

    assert f.actions() == [CREATE_NOON]


def test_deleting_cronjob_creates_nothing() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(finalizers=["example.com/keep"]))
    f.mark_deleting()

    result = f.sync()

    assert f.created_jobs() == []
    assert all(verb != "create" for verb, *_ in f.actions())
    assert result is None


# -- concurrency policy ------------------------------------------------------------------


def test_forbid_skips_run_while_a_job_is_active() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(concurrencyPolicy="Forbid", status={
        "lastScheduleTime": fmt(at("11:55"))}))
    f.add_job(new_job(cj, at("11:55")))

    result = f.sync()

    assert f.created_jobs() == []
    assert f.events() == [("Normal", "JobAlreadyActive")]
    assert result is not None
    assert result.requeue_after == pytest.approx(270 + REQUEUE_SLACK_SECONDS)

    f.refresh()
    f.clear()
    f.sync()
    assert f.events() == [] and f.actions() == []  # reported once per run time


def test_forbid_starts_the_run_once_the_active_job_finished() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(concurrencyPolicy="Forbid", status={
        "lastScheduleTime": fmt(at("11:55"))}))
    f.add_job(new_job(cj, at("11:55"), finished="Complete"))

    f.sync()

    assert f.actions() == [CREATE_NOON]


def test_replace_deletes_active_jobs_then_creates() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(concurrencyPolicy="Replace", status={
        "lastScheduleTime": fmt(at("11:55"))}))
    running = f.add_job(new_job(cj, at("11:55")))

    f.sync()

    name = running["metadata"]["name"]
    assert f.actions() == [delete(name), CREATE_NOON]
    assert f.deletes() == [(name, background(running))]
    assert f.events() == [("Normal", "SuccessfulDelete"), ("Normal", "SuccessfulCreate")]
    assert f.job_names() == [NOON_JOB]


def test_replace_with_status_not_deferred_lists_only_the_new_job() -> None:
    f = Fixture(defer_status_after_create=False)
    cj = f.add_cronjob(new_cronjob(concurrencyPolicy="Replace", status={
        "lastScheduleTime": fmt(at("11:55"))}))
    f.add_job(new_job(cj, at("11:55")))

    f.sync()

    assert [v for v, *_ in f.actions()] == ["delete", "create", "patch"]
    assert [r["name"] for r in f.status()["active"]] == [NOON_JOB]


def test_allow_creates_alongside_an_active_job() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(at("11:55"))}))
    f.add_job(new_job(cj, at("11:55")))

    f.sync()

    assert f.actions() == [CREATE_NOON]
    assert f.events() == [("Normal", "SuccessfulCreate")]
    f.refresh()
    f.clear()
    f.sync()
    assert [r["name"] for r in f.status()["active"]] == ["hello-29552395", NOON_JOB]


# -- starting deadline -------------------------------------------------------------------


def test_starting_deadline_just_inside_creates() -> None:
    f = Fixture()  # 30 s late
    f.add_cronjob(new_cronjob(startingDeadlineSeconds=31))

    f.sync()

    assert f.actions() == [CREATE_NOON]


def test_starting_deadline_reached_misses_the_run_once() -> None:
    f = Fixture()  # now == 12:00 + 30 s exactly
    f.add_cronjob(new_cronjob(startingDeadlineSeconds=30))

    result = f.sync()

    assert f.created_jobs() == []
    assert f.events() == [("Warning", "MissSchedule")]
    assert f.messages("MissSchedule") == [
        "Missed scheduled time to start a job: 2026-03-10T12:00:00Z"]
    assert result is not None
    assert result.requeue_after == pytest.approx(270 + REQUEUE_SLACK_SECONDS)

    f.refresh()
    f.clear()
    f.sync()
    assert f.events() == [] and f.actions() == []


def test_missed_run_does_not_block_the_next_one() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(startingDeadlineSeconds=30))
    f.settle()
    f.clock.set_time(at("12:05", second=5))

    f.sync()

    assert f.actions() == [("create", "jobs", "hello-29552405", None)]


@pytest.mark.parametrize("late", [0, 30, 3600])
def test_zero_starting_deadline_never_starts(late: int) -> None:
    f = Fixture(now=at("12:00", second=0))
    f.add_cronjob(new_cronjob(startingDeadlineSeconds=0))
    f.clock.step(late)

    f.sync()

    assert f.created_jobs() == []
    assert ("Warning", "MissSchedule") in f.events()


def test_more_than_100_missed_warns_and_still_starts_the_latest() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(schedule="* * * * *", created=at("10:00")))  # 120 missed

    f.sync()

    assert f.actions() == [CREATE_NOON]
    assert f.events() == [("Warning", "TooManyMissedTimes"), ("Normal", "SuccessfulCreate")]


def test_exactly_100_missed_is_not_too_many() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(schedule="* * * * *", created=at("10:20")))  # 10:21..12:00

    f.sync()

    assert f.events() == [("Normal", "SuccessfulCreate")]


def test_starting_deadline_bounds_the_missed_count() -> None:
    # Upstream counts missed times only within (now - D, now]: with D = 200 s, three.
    f = Fixture()
    f.add_cronjob(new_cronjob(schedule="* * * * *", created=at("09:00"),
                              startingDeadlineSeconds=200))

    f.sync()

    assert f.actions() == [CREATE_NOON]
    assert f.events() == [("Normal", "SuccessfulCreate")]


def test_messages_give_times_in_the_cronjobs_time_zone() -> None:
    # 12:00 UTC on 2026-03-10 is 08:00 in New York (daylight saving time since March 8).
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(concurrencyPolicy="Forbid", timeZone="America/New_York",
                                   status={"lastScheduleTime": fmt(at("11:55"))}))
    f.add_job(new_job(cj, at("11:55")))

    f.sync()

    assert f.messages("JobAlreadyActive") == [
        "Not starting job for 2026-03-10T08:00:00-04:00 because a prior execution is still "
        "running and concurrency policy is Forbid"]
