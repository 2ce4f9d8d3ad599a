"""The CronJob controller against the real API server, with time moved by a FakeClock."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cronjob_controller.api import SCHEDULED_TIMESTAMP_ANNOTATION
from cronjob_controller.jobs import job_name
from pyctrl.kube import JOBS
from tests.integration.cronjob.env import Env, minute_floor, wait_for

pytestmark = pytest.mark.integration


def test_creates_job_on_schedule_with_owner_labels_and_annotation(env: Env) -> None:
    env.create_cronjob("hello")
    env.start()
    due = env.next_minute()
    name = job_name("hello", due)
    wait_for(lambda: name in env.job_names("hello"), what=f"job {name}")
    job = env.client.get(JOBS, name, env.namespace)
    meta = job["metadata"]
    assert meta["labels"]["app"] == "hello"
    assert meta["annotations"]["team"] == "pyctrl"
    assert meta["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION] == due.strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    owner = meta["ownerReferences"][0]
    assert owner["kind"] == "CronJob" and owner["controller"] is True
    assert owner["blockOwnerDeletion"] is True
    assert owner["uid"] == env.cronjob("hello")["metadata"]["uid"]
    # Status follows from the world: the Job is active and lastScheduleTime is its time.
    wait_for(lambda: (env.cronjob("hello").get("status") or {}).get("lastScheduleTime")
             == due.strftime("%Y-%m-%dT%H:%M:%SZ"), what="lastScheduleTime")
    status = env.cronjob("hello")["status"]
    assert [a["name"] for a in status["active"]] == [name]
    assert status["nextScheduleTime"] == (due + timedelta(minutes=1)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    assert env.events("SuccessfulCreate", "hello")


def test_no_duplicate_after_restart_or_with_two_replicas(env: Env) -> None:
    env.create_cronjob("twice")
    env.start()
    due = env.next_minute()
    wait_for(lambda: env.job_names("twice"), what="first job")
    env.stop()
    # A restarted controller at the same instant, and then two replicas at once, find the
    # run already done (deterministic names): still exactly one Job per scheduled time.
    env.start()
    env.start()
    due2 = env.next_minute()
    wait_for(lambda: len(env.job_names("twice")) >= 2, what="second job")
    env.step_to(env.clock.now() + timedelta(seconds=5))
    names = sorted(env.job_names("twice"))
    assert names == sorted([job_name("twice", due), job_name("twice", due2)])


def test_forbid_skips_run_while_job_active(env: Env) -> None:
    env.create_cronjob("forbid", concurrencyPolicy="Forbid")
    env.start()
    first = env.next_minute()
    wait_for(lambda: env.job_names("forbid"), what="first job")
    second = env.next_minute()
    wait_for(lambda: env.events("JobAlreadyActive", "forbid"), what="JobAlreadyActive")
    assert env.job_names("forbid") == {job_name("forbid", first)}
    # Once the active Job finishes, the skipped run (no deadline) starts.
    env.finish_job(job_name("forbid", first))
    wait_for(lambda: job_name("forbid", second) in env.job_names("forbid"),
             what="skipped run after completion")


def test_replace_deletes_active_job_first(env: Env) -> None:
    env.create_cronjob("replace", concurrencyPolicy="Replace")
    env.start()
    first = env.next_minute()
    wait_for(lambda: env.job_names("replace"), what="first job")
    second = env.next_minute()
    wait_for(lambda: env.job_names("replace") == {job_name("replace", second)},
             what="replacement")
    assert env.events("SuccessfulDelete", "replace")
    assert job_name("replace", first) not in env.job_names("replace")


def test_history_limits_keep_newest_finished_jobs(env: Env) -> None:
    env.create_cronjob("hist", successfulJobsHistoryLimit=1, failedJobsHistoryLimit=1)
    env.start()
    made = []
    for outcome in ("Complete", "Complete", "Failed", "Failed"):
        due = env.next_minute()
        name = job_name("hist", due)
        wait_for(env.has_job("hist", name), what=name)
        env.finish_job(name, outcome)
        made.append(name)
    env.next_minute()
    wait_for(lambda: made[0] not in env.job_names("hist")
             and made[2] not in env.job_names("hist"), what="history cleanup")
    names = env.job_names("hist")
    assert made[1] in names and made[3] in names


def test_suspend_and_resume(env: Env) -> None:
    env.create_cronjob("sus", suspend=True)
    env.start()
    env.next_minute()
    env.step_to(env.clock.now() + timedelta(seconds=3))
    wait_for(lambda: (env.condition("sus") or {}).get("reason") == "Suspended",
             what="Suspended condition")
    assert env.job_names("sus") == set()
    env.patch_spec("sus", suspend=False)
    # No deadline: the most recent missed run starts on resume, then runs continue.
    wait_for(lambda: env.job_names("sus"), what="run after resume")
    due = env.next_minute()
    wait_for(lambda: job_name("sus", due) in env.job_names("sus"), what="next run")


def test_starting_deadline_misses_late_run(env: Env) -> None:
    env.create_cronjob("late", startingDeadlineSeconds=10)
    # The anchor is one minute back; the controller first runs 30 s after the due time.
    base = minute_floor(env.clock.now())
    env.seed_last_schedule("late", base - timedelta(minutes=1))
    env.step_to(base + timedelta(minutes=1, seconds=30))
    env.start()
    wait_for(lambda: env.events("MissSchedule", "late"), what="MissSchedule")
    assert env.job_names("late") == set()
    due = env.next_minute()
    wait_for(lambda: job_name("late", due) in env.job_names("late"), what="on-time run")


def test_too_many_missed_times_still_starts_latest(env: Env) -> None:
    env.create_cronjob("many")
    base = minute_floor(env.clock.now())
    env.seed_last_schedule("many", base - timedelta(minutes=300))
    env.step_to(base + timedelta(seconds=2))
    env.start()
    wait_for(lambda: env.events("TooManyMissedTimes", "many"), what="TooManyMissedTimes")
    wait_for(lambda: env.job_names("many") == {job_name("many", base)}, what="latest run")
