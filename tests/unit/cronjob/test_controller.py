"""The CronJob sync, core rules: creating runs, requeueing, the anchor, status from the world.

Each test seeds a :class:`Fixture` (fake server + informer caches + FakeClock at NOW =
12:00:30 UTC), runs one ``reconcile`` and asserts the exact client actions, the events and
the Result, in the style of kubernetes/sample-controller's controller_test.go.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from cronjob_controller.api import CRONJOBS, SCHEDULED_TIMESTAMP_ANNOTATION
from cronjob_controller.controller import REQUEUE_SLACK_SECONDS, skew_histogram
from pyctrl.kube import JOBS
from tests.unit.cronjob.sync_fixture import (
    KEY,
    NAMESPACE,
    NOW,
    Fixture,
    at,
    fmt,
    new_cronjob,
    new_job,
    run_name,
)

NOON = at("12:00")
NOON_JOB = "hello-29552400"  # 2026-03-10T12:00:00Z is 29552400 unix minutes
STATUS_PATCH = ("patch", "cronjobs", "hello", "status")


def create(name: str) -> tuple[str, str, str, None]:
    return ("create", "jobs", name, None)


def requeue_for(next_run: datetime, now: datetime = NOW) -> Any:
    """pytest.approx of the expected ``requeue_after``: seconds to ``next_run`` + slack."""
    return pytest.approx((next_run - now).total_seconds() + REQUEUE_SLACK_SECONDS)


# -- creating a run ----------------------------------------------------------------------


def test_due_run_creates_job_named_after_unix_minutes() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob())  # created 11:52, */5: 11:55 and 12:00 are due

    result = f.sync()

    assert run_name("hello", NOON) == NOON_JOB
    assert f.actions() == [create(NOON_JOB)]
    assert f.events() == [("Normal", "SuccessfulCreate")]
    assert result is not None and result.requeue_after == requeue_for(at("12:05"))
    assert f.job_names() == [NOON_JOB]


def test_created_job_carries_template_annotation_labels_and_controller_owner() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob())

    f.sync()

    [job] = f.created_jobs()
    meta = job["metadata"]
    assert meta["name"] == NOON_JOB and meta["namespace"] == NAMESPACE
    assert "generateName" not in meta
    assert meta["labels"] == {"app": "hello"}
    assert meta["annotations"] == {"team": "a",
                                   SCHEDULED_TIMESTAMP_ANNOTATION: "2026-03-10T12:00:00Z"}
    assert meta["ownerReferences"] == [{
        "apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob", "name": "hello",
        "uid": cj["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    assert job["spec"] == cj["spec"]["jobTemplate"]["spec"]


def test_sync_that_creates_defers_status_to_the_next_sync() -> None:
    f = Fixture()  # defer_status_after_create=True is the default
    f.add_cronjob(new_cronjob())

    f.sync()
    assert f.actions() == [create(NOON_JOB)]  # no status write on the critical path

    f.refresh()  # the Job's ADDED event reached the cache and re-queued the CronJob
    f.clear()
    result = f.sync()

    assert f.actions() == [STATUS_PATCH]
    assert f.events() == []
    status = f.status()
    assert [ref["name"] for ref in status["active"]] == [NOON_JOB]
    assert status["activeCount"] == 1
    assert status["lastScheduleTime"] == fmt(NOON)  # recovered from the Job's annotation
    assert status["nextScheduleTime"] == fmt(at("12:05"))
    assert result is not None and result.requeue_after == requeue_for(at("12:05"))


def test_sync_that_creates_writes_status_at_once_when_not_deferred() -> None:
    f = Fixture(defer_status_after_create=False)
    f.add_cronjob(new_cronjob())

    result = f.sync()

    assert f.actions() == [create(NOON_JOB), STATUS_PATCH]
    status = f.status()
    assert [ref["name"] for ref in status["active"]] == [NOON_JOB]
    assert status["lastScheduleTime"] == fmt(NOON)
    assert status["nextScheduleTime"] == fmt(at("12:05"))
    assert result is not None and result.requeue_after == requeue_for(at("12:05"))

    f.refresh()
    f.clear()
    f.sync()
    assert f.actions() == []  # already up to date


# -- nothing due / requeue ---------------------------------------------------------------


def test_nothing_due_writes_nothing_and_requeues_for_the_next_run() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(created=at("12:00", second=10)))
    f.settle()

    result = f.sync()

    assert f.actions() == []
    assert f.events() == []
    assert result is not None and result.requeue_after == requeue_for(at("12:05"))


def test_early_wake_requeues_for_the_rest() -> None:
    """A sync woken a hair before the due time (wall clock slewed against the monotonic one
    the delaying queue waits on) creates nothing and asks to come back right after it; the
    sync then runs the due run once."""
    f = Fixture(at("12:04", second=59))
    f.add_cronjob(new_cronjob(created=at("12:00", second=10)))
    f.settle()
    f.clock.set_time(at("12:05") - timedelta(milliseconds=3))

    early = f.sync()

    assert f.actions() == []
    assert early is not None and early.requeue_after is not None
    assert early.requeue_after == pytest.approx(0.003 + REQUEUE_SLACK_SECONDS)
    assert early.requeue_after < 0.1
    woken = at("12:05") - timedelta(milliseconds=3) + timedelta(seconds=early.requeue_after)
    f.clock.set_time(woken)
    on_time = f.sync()
    assert f.actions() == [create(run_name("hello", at("12:05")))]
    assert on_time is not None and on_time.requeue_after == requeue_for(at("12:10"), woken)


def test_first_sync_of_new_cronjob_writes_ready_status_and_next_schedule() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(created=at("12:00", second=10)))

    f.sync()

    assert f.actions() == [STATUS_PATCH]
    status = f.status()
    assert status["nextScheduleTime"] == fmt(at("12:05"))
    assert status["active"] == [] and status["activeCount"] == 0
    assert f.ready()["status"] == "True" and f.ready()["reason"] == "Scheduled"


def test_identical_second_sync_makes_no_write() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(NOON)}))
    f.sync()
    assert f.actions() == [STATUS_PATCH]
    f.refresh()
    f.clear()

    f.sync()

    assert f.actions() == []


def test_status_is_written_again_when_the_world_changes() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(NOON)}))
    f.add_job(new_job(cj, NOON))
    f.settle()
    f.client.patch(JOBS, NOON_JOB, {"status": {
        "conditions": [{"type": "Complete", "status": "True"}],
        "completionTime": fmt(at("12:00", second=20))}}, NAMESPACE, subresource="status")
    f.refresh()
    f.clear()

    f.sync()

    assert f.actions() == [STATUS_PATCH]
    assert f.status()["active"] == []
    assert f.status()["lastSuccessfulTime"] == fmt(at("12:00", second=20))


def test_missing_cronjob_ends_the_sync_without_calls() -> None:
    f = Fixture()

    assert f.sync("default/gone") is None
    assert f.actions() == [] and f.events() == []


# -- the anchor --------------------------------------------------------------------------


def test_anchor_is_last_schedule_time_when_present() -> None:
    # Created long ago; only lastScheduleTime = 12:00 keeps the 12:00 run from starting.
    f = Fixture()
    f.add_cronjob(new_cronjob(created=at("10:00"), status={"lastScheduleTime": fmt(NOON)}))

    result = f.sync()

    assert ("create", "jobs", NOON_JOB, None) not in f.actions()
    assert f.created_jobs() == []
    assert result is not None and result.requeue_after == requeue_for(at("12:05"))


def test_anchor_after_last_schedule_time_starts_the_next_run() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(created=at("10:00"), status={"lastScheduleTime": fmt(at("11:55"))}))

    f.sync()

    assert f.actions() == [create(NOON_JOB)]
    assert f.events() == [("Normal", "SuccessfulCreate")]  # one missed: no warning


@pytest.mark.parametrize(("created", "expect_run"), [
    (at("11:59", second=59), True),   # 12:00 is after creation: due
    (at("12:00"), False),             # anchor < t is strict: a run at creation is not due
    (at("12:00", second=10), False),
])
def test_anchor_is_creation_timestamp_without_last_schedule_time(
        created: datetime, expect_run: bool) -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(created=created))

    f.sync()

    assert [j["metadata"]["name"] for j in f.created_jobs()] == ([NOON_JOB] if expect_run else [])


# -- status rebuilt from the world -------------------------------------------------------


def test_active_lists_only_unfinished_jobs_controlled_by_this_cronjob() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), status={"lastScheduleTime": fmt(NOON)}))
    running = f.add_job(new_job(cj, NOON))
    f.add_job(new_job(cj, at("11:55"), finished="Complete"))
    f.add_job(new_job(cj, at("11:50"), finished="Failed"))
    f.add_job(new_job(cj, at("11:45"), owner_uid="uid-of-an-older-hello"))  # recreated CronJob
    f.add_job(new_job(cj, at("11:40"), owner_uid=""))  # nobody's

    f.sync()

    assert f.actions() == [STATUS_PATCH]
    [active] = f.status()["active"]
    assert active == {"apiVersion": "batch/v1", "kind": "Job", "name": NOON_JOB,
                      "namespace": NAMESPACE, "uid": running["metadata"]["uid"]}


def test_job_of_a_recreated_cronjob_with_another_uid_is_not_ours() -> None:
    # The old "hello" left a running Job; the new "hello" (another uid) must not count it
    # as active (Forbid would otherwise block) nor as a source of lastScheduleTime.
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:58"), concurrencyPolicy="Forbid"))
    f.add_job(new_job(cj, at("11:55"), owner_uid="uid-of-an-older-hello"))

    f.sync()

    assert f.actions() == [create(NOON_JOB)]
    assert f.events() == [("Normal", "SuccessfulCreate")]


def test_last_successful_time_is_latest_completion_among_complete_jobs() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), status={"lastScheduleTime": fmt(NOON)}))
    f.add_job(new_job(cj, at("11:50"), finished="Complete", completed=at("11:56")))
    f.add_job(new_job(cj, at("11:55"), finished="Complete", completed=at("11:55", second=40)))
    f.add_job(new_job(cj, NOON, finished="Failed"))  # failures never count as success
    f.add_job(new_job(cj, at("11:45"), finished="Complete", completed=at("11:59"),
                      owner_uid="someone-else"))

    f.sync()

    assert f.status()["lastSuccessfulTime"] == fmt(at("11:56"))


def test_last_successful_time_never_goes_backwards() -> None:
    # The Job that set 11:58 was cleaned up; an older completion must not win.
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), status={
        "lastScheduleTime": fmt(NOON), "lastSuccessfulTime": fmt(at("11:58"))}))
    f.add_job(new_job(cj, at("11:50"), finished="Complete", completed=at("11:51")))

    f.sync()

    assert f.status()["lastSuccessfulTime"] == fmt(at("11:58"))


def test_last_schedule_time_is_recovered_from_job_annotation() -> None:
    # A status write was lost: the 12:00 Job exists but status says nothing.
    f = Fixture()
    cj = f.add_cronjob(new_cronjob())
    f.add_job(new_job(cj, NOON))

    result = f.sync()

    assert f.actions() == [STATUS_PATCH]  # no second create for 12:00
    assert f.status()["lastScheduleTime"] == fmt(NOON)
    assert result is not None and result.requeue_after == requeue_for(at("12:05"))


def test_last_schedule_time_never_goes_backwards_to_an_older_job() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), status={"lastScheduleTime": fmt(NOON)}))
    f.add_job(new_job(cj, at("11:50"), finished="Complete"))

    f.sync()

    assert f.status()["lastScheduleTime"] == fmt(NOON)


def test_saw_completed_job_when_a_previously_active_job_finished() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), status={"lastScheduleTime": fmt(NOON)}))
    job = f.add_job(new_job(cj, NOON))
    f.settle()
    assert [r["name"] for r in f.status()["active"]] == [NOON_JOB]
    f.client.patch(JOBS, NOON_JOB, {"status": {"conditions": [
        {"type": "Failed", "status": "True"}]}}, NAMESPACE, subresource="status")
    f.refresh()
    f.clear()

    f.sync()

    assert f.events() == [("Normal", "SawCompletedJob")]
    assert f.messages("SawCompletedJob") == [
        f"Saw completed job: {job['metadata']['name']}, condition: Failed"]
    assert f.actions() == [STATUS_PATCH]
    assert f.status()["active"] == []

    f.refresh()
    f.clear()
    f.sync()
    assert f.events() == [] and f.actions() == []  # reported once: it is no longer active


def test_finished_job_that_was_never_listed_active_is_not_reported() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), status={"lastScheduleTime": fmt(NOON)}))
    f.add_job(new_job(cj, NOON, finished="Complete"))

    f.sync()

    assert f.events() == []


def test_job_annotated_in_another_zone_recovers_the_same_instant() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(timeZone="America/New_York"))
    job = new_job(cj, NOON)
    job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION] = "2026-03-10T08:00:00-04:00"
    f.add_job(job)

    f.sync()

    assert f.created_jobs() == []
    assert f.status()["lastScheduleTime"] == fmt(NOON)


# -- time zones --------------------------------------------------------------------------


def test_cronjob_in_new_york_runs_at_local_nine() -> None:
    # 2026-03-10 is after the US spring-forward (March 8): 09:00 EDT is 13:00 UTC.
    f = Fixture(now=datetime(2026, 3, 10, 13, 0, 30, tzinfo=UTC))
    f.add_cronjob(new_cronjob(schedule="0 9 * * *", timeZone="America/New_York",
                              created=at("12:00")))

    result = f.sync()

    assert f.actions() == [create("hello-29552460")]
    [job] = f.created_jobs()
    assert job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION] == (
        "2026-03-10T09:00:00-04:00")
    next_run = datetime(2026, 3, 11, 13, 0, tzinfo=UTC)
    assert result is not None
    assert result.requeue_after == requeue_for(next_run, datetime(2026, 3, 10, 13, 0, 30,
                                                                  tzinfo=UTC))


def test_cronjob_in_new_york_is_not_due_at_utc_nine() -> None:
    f = Fixture(now=datetime(2026, 3, 10, 9, 0, 30, tzinfo=UTC))
    f.add_cronjob(new_cronjob(schedule="0 9 * * *", timeZone="America/New_York",
                              created=at("08:00")))

    f.sync()

    assert f.created_jobs() == []
    assert f.status()["nextScheduleTime"] == "2026-03-10T13:00:00Z"


# -- metrics -----------------------------------------------------------------------------


def test_creation_skew_histogram_observes_created_minus_scheduled() -> None:
    registry = CollectorRegistry()
    f = Fixture(registry=registry)
    f.add_cronjob(new_cronjob())

    f.sync()

    name = "cronjob_controller_cronjob_job_creation_skew_duration_seconds"
    assert registry.get_sample_value(f"{name}_count") == 1.0
    assert registry.get_sample_value(f"{name}_sum") == pytest.approx(30.0)
    assert registry.get_sample_value(f"{name}_bucket", {"le": "32.0"}) == 1.0
    assert registry.get_sample_value(f"{name}_bucket", {"le": "16.0"}) == 0.0


def test_creation_skew_is_not_observed_for_a_job_that_already_existed() -> None:
    registry = CollectorRegistry()
    f = Fixture(registry=registry)
    cj = f.add_cronjob(new_cronjob())
    f.add_job(new_job(cj, NOON), cache=False)  # the cache lags: create meets AlreadyExists

    f.sync()

    assert f.actions() == [create(NOON_JOB), ("get", "jobs", NOON_JOB, None)]
    assert registry.get_sample_value(
        "cronjob_controller_cronjob_job_creation_skew_duration_seconds_count") == 0.0


def test_skew_histogram_is_per_registry() -> None:
    first, second = CollectorRegistry(), CollectorRegistry()
    a = Fixture(registry=first)
    b = Fixture(registry=second)
    for f in (a, b):
        f.add_cronjob(new_cronjob())
    a.sync()

    name = "cronjob_controller_cronjob_job_creation_skew_duration_seconds_count"
    assert first.get_sample_value(name) == 1.0
    assert second.get_sample_value(name) == 0.0


def test_skew_histogram_is_registered_on_every_new_registry() -> None:
    # Registries come and go (one per test, per Manager); CPython reuses the address of a
    # freed one, which must not hand the new registry a histogram registered on the old.
    for _ in range(20):
        registry = CollectorRegistry()
        assert skew_histogram(registry) is skew_histogram(registry)
        assert registry.get_sample_value(
            "cronjob_controller_cronjob_job_creation_skew_duration_seconds_count") == 0.0
        del registry


def test_fixture_seeds_creation_timestamp_and_leaves_the_clock_at_now() -> None:
    # Guards the fixture itself: a seed must not move time.
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00")))
    assert cj["metadata"]["creationTimestamp"] == "2026-03-10T11:00:00Z"
    assert f.clock.now() == NOW
    assert f.client.get_object(CRONJOBS, "hello", NAMESPACE)["metadata"]["uid"] == (
        cj["metadata"]["uid"])
    assert NOW - timedelta(seconds=30) == NOON.astimezone(UTC)
    assert KEY == "default/hello"


def test_run_in_a_skipped_dst_hour_starts_once_right_after_the_gap() -> None:
    # New York springs forward on 2026-03-08 at 02:00 -> 03:00: 02:30 does not exist that day.
    now = datetime(2026, 3, 8, 7, 0, 30, tzinfo=UTC)  # 03:00:30 EDT
    f = Fixture(now=now)
    f.add_cronjob(new_cronjob(schedule="30 2 * * *", timeZone="America/New_York",
                              created=at("12:00", day=7)))

    f.sync()

    [job] = f.created_jobs()
    assert job["metadata"]["name"] == run_name("hello", datetime(2026, 3, 8, 7, 0, tzinfo=UTC))
    assert job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION] == (
        "2026-03-08T03:00:00-04:00")


def test_run_in_a_repeated_dst_hour_starts_only_at_its_first_occurrence() -> None:
    # New York falls back on 2026-11-01 at 02:00 -> 01:00: 01:30 happens twice.
    first = datetime(2026, 11, 1, 5, 30, tzinfo=UTC)  # 01:30 EDT
    f = Fixture(now=datetime(2026, 11, 1, 6, 30, 30, tzinfo=UTC))  # 01:30:30 EST
    f.add_cronjob(new_cronjob(schedule="30 1 * * *", timeZone="America/New_York",
                              created=datetime(2026, 10, 30, tzinfo=UTC),
                              status={"lastScheduleTime": fmt(first)}))

    result = f.sync()

    assert f.created_jobs() == []
    assert f.status()["nextScheduleTime"] == "2026-11-02T06:30:00Z"
    assert result is not None


def test_saw_completed_job_is_reported_once_across_a_deferred_status_write() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(created=at("11:00"), status={"lastScheduleTime": fmt(NOON)}))
    f.add_job(new_job(cj, NOON))
    f.settle()  # lists the 12:00 Job as active
    f.client.patch(JOBS, NOON_JOB, {"status": {"conditions": [
        {"type": "Complete", "status": "True"}]}}, NAMESPACE, subresource="status")
    f.refresh()
    f.clear()
    f.clock.set_time(at("12:05", second=1))  # the next */5 run

    f.sync()  # sees the completion and creates the 12:05 run; status write deferred
    assert ("Normal", "SawCompletedJob") in f.events()
    assert f.created_jobs() and not f.status_writes()

    f.refresh()
    f.clear()
    f.sync()  # status still listed the 12:00 Job as active until this sync writes it
    assert ("Normal", "SawCompletedJob") not in f.events()
    assert f.status_writes()
