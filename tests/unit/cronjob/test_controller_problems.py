"""The CronJob sync when things go wrong: name clashes, API errors, invalid specs, edits.

Same fixture as test_controller.py: NOW = 12:00:30 UTC, schedule ``*/5 * * * *`` unless a
test says otherwise, so the 12:00 run (Job ``hello-29552400``) is the one due.
"""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from cronjob_controller.api import CRONJOBS
from cronjob_controller.controller import REQUEUE_SLACK_SECONDS
from cronjob_controller.status import schedule_digest
from pyctrl.errors import ApiError, Conflict, Forbidden, ServerError
from pyctrl.kube import JOBS
from pyctrl.testing import Action
from tests.unit.cronjob.sync_fixture import (
    NAMESPACE,
    NOW,
    Fixture,
    at,
    fmt,
    new_cronjob,
    new_job,
)

NOON = at("12:00")
NOON_JOB = "hello-29552400"
STATUS_PATCH = ("patch", "cronjobs", "hello", "status")
CREATE_NOON = ("create", "jobs", NOON_JOB, None)
GET_NOON = ("get", "jobs", NOON_JOB, None)


def failing(err: ApiError) -> Any:
    """A reactor failing real creates with ``err`` (dry runs pass: the template is fine)."""
    def react(action: Action) -> None:
        if not action.options.get("dry_run"):
            raise err
    return react


# -- our deterministic name is already taken ---------------------------------------------


def test_already_exists_for_our_own_job_counts_as_success() -> None:
    # Another replica (or our previous life) created the run; our cache has not seen it.
    f = Fixture()
    cj = f.add_cronjob(new_cronjob())
    f.add_job(new_job(cj, NOON), cache=False)

    result = f.sync()

    assert f.actions() == [CREATE_NOON, GET_NOON]
    assert f.events() == []  # neither FailedCreate nor a second SuccessfulCreate
    assert result is not None
    assert result.requeue_after == pytest.approx(270 + REQUEUE_SLACK_SECONDS)
    assert f.job_names() == [NOON_JOB]


def test_already_exists_for_our_own_job_is_listed_active() -> None:
    f = Fixture(defer_status_after_create=False)
    cj = f.add_cronjob(new_cronjob())
    job = f.add_job(new_job(cj, NOON), cache=False)

    f.sync()

    assert f.actions() == [CREATE_NOON, GET_NOON, STATUS_PATCH]
    assert [r["uid"] for r in f.status()["active"]] == [job["metadata"]["uid"]]
    assert f.status()["lastScheduleTime"] == fmt(NOON)


def test_foreign_job_holding_our_name_is_reported_and_left_alone() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob())
    foreign = f.add_job(new_job(cj, NOON, owner_uid="uid-of-an-older-hello"))

    f.sync()

    assert f.actions() == [STATUS_PATCH]  # no create, no update, no delete of the Job
    assert f.events() == [("Warning", "UnexpectedJob")]
    assert NOON_JOB in f.messages("UnexpectedJob")[0]
    assert f.client.get_object(JOBS, NOON_JOB, NAMESPACE) == foreign
    assert f.status()["active"] == []
    assert "lastScheduleTime" not in f.status() or f.status()["lastScheduleTime"] is None

    f.refresh()
    f.clear()
    f.sync()
    assert f.events() == [] and f.actions() == []  # reported once


def test_foreign_job_found_only_through_already_exists_is_left_alone() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob())
    foreign = f.add_job(new_job(cj, NOON, owner_uid=""), cache=False)  # no owner at all

    f.sync()

    assert f.actions() == [CREATE_NOON, GET_NOON, STATUS_PATCH]
    assert f.events() == [("Warning", "UnexpectedJob")]
    assert f.client.get_object(JOBS, NOON_JOB, NAMESPACE) == foreign


def test_cronjob_keeps_working_after_a_foreign_job_took_one_run() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob())
    f.add_job(new_job(cj, NOON, owner_uid="uid-of-an-older-hello"))
    f.settle()
    f.clock.set_time(at("12:05", second=1))

    f.sync()

    assert f.actions() == [("create", "jobs", "hello-29552405", None)]
    assert f.events() == [("Normal", "SuccessfulCreate")]


# -- API errors --------------------------------------------------------------------------


@pytest.mark.parametrize("err", [
    Forbidden('jobs.batch "hello-29552400" is forbidden: exceeded quota', 403, "Forbidden"),
    ServerError("etcdserver: request timed out", 500, "InternalError"),
])
def test_other_create_errors_emit_failed_create_and_propagate(err: ApiError) -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob())
    f.client.prepend_reactor("create", JOBS, failing(err))

    with pytest.raises(type(err)):
        f.sync()  # the worker's rate-limited requeue retries it

    assert f.actions() == [CREATE_NOON]  # no status write either
    assert f.events() == [("Warning", "FailedCreate")]
    assert err.message in f.messages("FailedCreate")[0]


def test_failed_create_is_retried_by_the_next_sync() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob())
    outage = [True]

    def react(action: Action) -> None:
        if outage[0] and not action.options.get("dry_run"):
            raise ServerError("boom", 500)

    f.client.prepend_reactor("create", JOBS, react)
    with pytest.raises(ServerError):
        f.sync()
    f.client.clear_actions()
    outage[0] = False

    f.sync()

    assert f.actions() == [CREATE_NOON]


def test_replace_delete_error_emits_failed_delete_and_creates_nothing() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(concurrencyPolicy="Replace", status={
        "lastScheduleTime": fmt(at("11:55"))}))
    running = f.add_job(new_job(cj, at("11:55")))
    f.client.prepend_reactor("delete", JOBS, failing(Conflict("uid mismatch", 409, "Conflict")))

    with pytest.raises(Conflict):
        f.sync()

    assert f.actions() == [("delete", "jobs", running["metadata"]["name"], None)]
    assert f.events() == [("Warning", "FailedDelete")]


def test_replace_of_a_job_already_gone_still_creates() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(concurrencyPolicy="Replace", status={
        "lastScheduleTime": fmt(at("11:55"))}))
    f.add_job(new_job(cj, at("11:55")), server=False)  # deleted; the cache lags

    f.sync()

    assert f.actions() == [("delete", "jobs", "hello-29552395", None), CREATE_NOON]


# -- invalid specs -----------------------------------------------------------------------

LONG = "x" * 53


@pytest.mark.parametrize(("name", "spec", "reason", "event", "field"), [
    ("hello", {"schedule": "61 * * * *"}, "InvalidSchedule", "InvalidSchedule",
     "spec.schedule"),
    ("hello", {"schedule": "TZ=UTC 0 * * * *"}, "InvalidSchedule", "InvalidSchedule",
     "spec.schedule"),
    ("hello", {"timeZone": "Mars/Olympus_Mons"}, "UnknownTimeZone", "UnknownTimeZone",
     "spec.timeZone"),
    (LONG, {}, "InvalidSpec", "InvalidSpec", "metadata.name"),
    ("hello", {"jobTemplate": {"metadata": {"labels": {"a": "b"}}}}, "InvalidSpec",
     "InvalidSpec", "spec.jobTemplate.spec"),
], ids=["bad-schedule", "tz-prefix", "unknown-zone", "long-name", "no-job-spec"])
def test_invalid_spec_sets_ready_false_and_warns_once(
        name: str, spec: dict[str, Any], reason: str, event: str, field: str) -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(name, **spec))
    key = f"{NAMESPACE}/{name}"

    result = f.sync(key)

    assert result is None  # no requeue: only an edit of the object brings it back
    assert f.actions() == [("patch", "cronjobs", name, "status")]
    assert f.events() == [("Warning", event)]
    assert field in f.messages(event)[0]
    ready = f.ready(name)
    assert (ready["status"], ready["reason"]) == ("False", reason)
    assert field in ready["message"]

    f.refresh()
    f.clear()
    assert f.sync(key) is None
    assert f.actions() == [] and f.events() == []


def test_invalid_cronjob_is_logged_once_per_problem() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(schedule="61 * * * *"))

    with capture_logs() as logs:
        f.sync()
        f.refresh()
        f.sync()  # the status write's own update event brings the key back
        f.client.patch(CRONJOBS, "hello", {"spec": {"schedule": "62 * * * *"}}, NAMESPACE)
        f.refresh()
        f.sync()  # another problem: logged again

    problems = [e["problem"] for e in logs if e["event"] == "invalid cronjob"]
    assert len(problems) == 2 and "61" in problems[0] and "62" in problems[1]


def test_fixing_an_invalid_schedule_makes_it_ready_and_scheduled() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(schedule="61 * * * *"))
    f.settle()
    f.client.patch(CRONJOBS, "hello", {"spec": {"schedule": "*/5 * * * *"}}, NAMESPACE)
    f.refresh()
    f.clear()

    result = f.sync()

    assert f.events() == []
    assert result is not None
    assert result.requeue_after == pytest.approx(270 + REQUEUE_SLACK_SECONDS)
    ready = f.ready()
    assert (ready["status"], ready["reason"], ready["message"]) == ("True", "Scheduled", "")
    assert f.created_jobs() == []  # 12:00 was before the fix (the edit rule)


def test_breaking_the_schedule_again_warns_again() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(schedule="61 * * * *"))
    f.settle()
    for schedule in ("*/5 * * * *", "61 * * * *"):
        f.client.patch(CRONJOBS, "hello", {"spec": {"schedule": schedule}}, NAMESPACE)
        f.refresh()
        f.sync()

    assert f.events() == [("Warning", "InvalidSchedule")]


def test_invalid_history_limit_skips_cleanup_but_reports() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), failedJobsHistoryLimit=-1))
    f.add_job(new_job(cj, at("11:50"), finished="Failed"))
    f.add_job(new_job(cj, at("11:55"), finished="Failed"))

    assert f.sync() is None

    assert f.deletes() == []
    assert f.created_jobs() == []
    assert f.ready()["status"] == "False"
    assert "spec.failedJobsHistoryLimit" in f.ready()["message"]


# -- schedule / timeZone edits -----------------------------------------------------------


def test_schedule_edit_never_starts_a_run_for_a_time_before_the_edit() -> None:
    f = Fixture(now=at("11:40"))
    f.add_cronjob(new_cronjob(schedule="0 * * * *", created=at("10:30"),
                              status={"lastScheduleTime": fmt(at("11:00"))}))
    f.settle()
    # At 11:40 the user moves the run to half past: 11:30 is after lastScheduleTime (11:00)
    # but before the edit, so it must not start now.
    f.client.patch(CRONJOBS, "hello", {"spec": {"schedule": "30 * * * *"}}, NAMESPACE)
    f.refresh()
    f.clear()

    result = f.sync()

    assert f.created_jobs() == []
    assert f.actions() == [STATUS_PATCH]
    assert f.status()["observedSchedule"] == {
        "digest": schedule_digest("30 * * * *", ""), "since": fmt(at("11:40"))}
    assert result is not None
    assert result.requeue_after == pytest.approx(50 * 60 + REQUEUE_SLACK_SECONDS)

    f.refresh()
    f.clear()
    f.clock.set_time(at("12:30", second=2))
    f.sync()
    assert f.actions() == [("create", "jobs", "hello-29552430", None)]


def test_time_zone_edit_never_starts_a_run_for_a_time_before_the_edit() -> None:
    # 09:00 daily ran at 09:00 UTC. At 12:00:30 UTC the zone becomes Sao Paulo (UTC-3),
    # where 09:00 was 12:00 UTC: after lastScheduleTime, but before the edit.
    f = Fixture()
    f.add_cronjob(new_cronjob(schedule="0 9 * * *", created=at("08:00", day=1),
                              status={"lastScheduleTime": fmt(at("09:00"))}))
    f.settle()
    f.client.patch(CRONJOBS, "hello", {"spec": {"timeZone": "America/Sao_Paulo"}}, NAMESPACE)
    f.refresh()
    f.clear()

    f.sync()

    assert f.created_jobs() == []
    assert f.status()["observedSchedule"] == {
        "digest": schedule_digest("0 9 * * *", "America/Sao_Paulo"), "since": fmt(NOW)}
    assert f.status()["nextScheduleTime"] == fmt(at("12:00", day=11))

    f.refresh()
    f.clear()
    f.clock.set_time(at("12:00", day=11, second=1))
    f.sync()
    assert [j["metadata"]["annotations"]["batch.pyctrl.io/scheduled-timestamp"]
            for j in f.created_jobs()] == ["2026-03-11T09:00:00-03:00"]


def test_unedited_schedule_records_no_edit_time() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(created=at("11:52")))
    f.settle()
    assert f.status()["observedSchedule"] == {"digest": schedule_digest("*/5 * * * *", "")}
    f.client.patch(CRONJOBS, "hello", {"spec": {"suspend": True}}, NAMESPACE)
    f.refresh()

    f.sync()

    assert f.status()["observedSchedule"] == {"digest": schedule_digest("*/5 * * * *", "")}


def test_edited_schedule_keeps_its_observed_since() -> None:
    f = Fixture(now=at("11:40"))
    f.add_cronjob(new_cronjob(schedule="0 * * * *", created=at("10:30")))
    f.settle()
    f.client.patch(CRONJOBS, "hello", {"spec": {"schedule": "30 * * * *"}}, NAMESPACE)
    f.refresh()
    f.sync()
    f.refresh()
    f.client.patch(CRONJOBS, "hello", {"spec": {"suspend": True}}, NAMESPACE)
    f.refresh()
    f.clock.set_time(at("11:45"))

    f.sync()

    assert f.status()["observedSchedule"]["since"] == fmt(at("11:40"))
