"""The CronJob sync under adversarial conditions (issue 11): never a run twice, never silent.

Same fixture as test_controller.py: NOW = 12:00:30 UTC, schedule ``*/5 * * * *`` unless a
test says otherwise, so the 12:00 run (Job ``hello-29552400``) is the one due. The status
write is deferred after a create (production default) unless a test says otherwise.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
import pytest

from cronjob_controller.api import CRONJOBS
from cronjob_controller.controller import (
    CACHE_WAIT_SECONDS,
    MAX_MESSAGE_LENGTH,
    REASON_INVALID_JOB_TEMPLATE,
    REQUEUE_SLACK_SECONDS,
)
from cronjob_controller.expectations import RunRecord
from cronjob_controller.status import schedule_digest
from pyctrl import Manager, ManagerOptions, MetricsOptions, Request, Result
from pyctrl.api import decode
from pyctrl.cache import DeletedFinalStateUnknown
from pyctrl.errors import ApiError, Forbidden, Invalid
from pyctrl.kube import JOBS
from pyctrl.models.batch_v1 import Job
from pyctrl.testing import Action, FakeClient, FakeClock
from tests.threads import running
from tests.unit.cronjob.sync_fixture import (
    NAMESPACE,
    NOW,
    Fixture,
    at,
    fmt,
    new_cronjob,
    new_job,
    run_name,
)
from tests.unit.runtime.helpers import eventually

NO_RUNTIME_METRICS = ManagerOptions(metrics=MetricsOptions(runtime_metrics=False))

NOON = at("12:00")
NOON_JOB = "hello-29552400"
STATUS_PATCH = ("patch", "cronjobs", "hello", "status")


def failing(err: ApiError) -> Any:
    """A reactor failing real creates with ``err`` (dry runs pass: the template is fine)."""
    def react(action: Action) -> None:
        if not action.options.get("dry_run"):
            raise err
    return react


def resync(f: Fixture) -> None:
    """The informers caught up and the key came back."""
    f.refresh()
    f.clear()
    f.sync()


# -- 1. a run is never created twice ----------------------------------------------------


def test_run_deleted_before_the_deferred_status_write_is_not_created_again() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(at("11:55"))}))
    f.sync()
    assert f.job_names() == [NOON_JOB]
    # ttlSecondsAfterFinished: 0 (or a user): the Job is gone before any status write.
    f.client.delete(JOBS, NOON_JOB, NAMESPACE)

    resync(f)

    assert f.created_jobs() == []
    assert f.actions() == [STATUS_PATCH]  # the run is recorded at once
    assert f.status()["lastScheduleTime"] == fmt(NOON)
    resync(f)
    assert f.actions() == []
    assert len(f.reconciler.runs) == 0  # the status records it now: nothing kept


def test_job_seen_by_a_sync_then_deleted_is_not_created_again() -> None:
    # Another replica (or our previous life) created the 12:00 Job; a sync saw it but its
    # status write failed; then the Job was deleted.
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(at("11:55"))}))
    f.add_job(new_job(cj, NOON))
    outage = [True]

    def react(action: Action) -> None:
        if outage[0]:
            raise ApiError("etcd is having a bad day", 500)

    f.client.prepend_reactor("patch", CRONJOBS, react)
    with pytest.raises(ApiError):
        f.sync()
    outage[0] = False
    f.client.delete(JOBS, NOON_JOB, NAMESPACE)

    resync(f)

    assert f.created_jobs() == []
    assert f.status()["lastScheduleTime"] == fmt(NOON)


def test_deleted_job_final_state_counts_as_a_run() -> None:
    # The informer delivers the Job's deletion (as a tombstone) before any sync saw it.
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(at("11:55"))}))
    job = f.add_job(new_job(cj, NOON), cache=False)
    f.client.delete(JOBS, NOON_JOB, NAMESPACE)
    f.reconciler.observe_deleted_job(DeletedFinalStateUnknown(f"{NAMESPACE}/{NOON_JOB}", job))

    f.sync()

    assert f.created_jobs() == []
    assert f.status()["lastScheduleTime"] == fmt(NOON)


@pytest.mark.parametrize("wrap", [
    lambda job: decode(Job, job),  # a typed informer's delete notification
    lambda job: DeletedFinalStateUnknown(f"{NAMESPACE}/{NOON_JOB}", decode(Job, job)),
])
def test_a_typed_deleted_job_counts_as_a_run(wrap: Any) -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(at("11:55"))}))
    job = f.add_job(new_job(cj, NOON), cache=False)
    f.client.delete(JOBS, NOON_JOB, NAMESPACE)
    f.reconciler.observe_deleted_job(wrap(job))

    f.sync()

    assert f.created_jobs() == []
    assert f.status()["lastScheduleTime"] == fmt(NOON)


def test_an_undecodable_deleted_job_is_ignored() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob())
    job = new_job(cj, NOON)
    job["status"]["startTime"] = "not a time"

    f.reconciler.observe_deleted_job(job)

    assert len(f.reconciler.runs) == 0


def test_deleted_job_of_another_kind_of_owner_is_ignored() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob())
    job = new_job(cj, NOON)
    job["metadata"]["ownerReferences"][0]["apiVersion"] = "batch/v1"  # upstream's CronJob

    f.reconciler.observe_deleted_job(job)

    assert len(f.reconciler.runs) == 0


def test_record_is_forgotten_when_the_cronjob_is_gone() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob())
    f.sync()
    assert len(f.reconciler.runs) == 1
    f.client.delete(CRONJOBS, "hello", NAMESPACE)
    f.refresh()

    f.sync()

    assert len(f.reconciler.runs) == 0


def test_recreated_cronjob_of_the_same_name_does_not_inherit_the_record() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob())
    f.sync()  # 12:00 created for the first hello
    f.client.delete(CRONJOBS, "hello", NAMESPACE)
    f.client.delete(JOBS, NOON_JOB, NAMESPACE)
    f.add_cronjob(new_cronjob(created=at("11:58")))
    f.refresh()
    f.clear()

    f.sync()

    assert [j["metadata"]["name"] for j in f.created_jobs()] == [NOON_JOB]


# -- 3. an owned Job without the annotation ---------------------------------------------


def test_owned_job_without_annotation_advances_last_schedule_time_from_its_name() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(at("11:55"))}))
    f.add_job(new_job(cj, NOON, annotate=False))

    f.sync()

    assert f.created_jobs() == []
    assert f.status()["lastScheduleTime"] == fmt(NOON)


def test_owned_job_without_annotation_and_foreign_name_is_not_a_schedule() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(at("11:55"))}))
    f.add_job(new_job(cj, NOON, annotate=False, name="hello-manual"))
    f.add_job(new_job(cj, NOON, annotate=False, name="other-29552400"))

    f.sync()

    assert [j["metadata"]["name"] for j in f.created_jobs()] == [NOON_JOB]


def test_foreign_job_without_annotation_does_not_advance_last_schedule_time() -> None:
    f = Fixture(now=at("12:03"))
    cj = f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(at("11:55"))}))
    f.add_job(new_job(cj, NOON, annotate=False, owner_uid="someone-else"))

    f.sync()

    assert f.status()["lastScheduleTime"] == fmt(at("11:55"))


# -- 4. Replace when the active Job is already gone ---------------------------------------


def test_replace_of_a_job_already_gone_reports_missing_job() -> None:
    f = Fixture()
    cj = f.add_cronjob(new_cronjob(concurrencyPolicy="Replace", status={
        "lastScheduleTime": fmt(at("11:55"))}))
    gone = f.add_job(new_job(cj, at("11:55")), server=False)  # only the cache still has it

    f.sync()

    assert f.events() == [("Normal", "MissingJob"), ("Normal", "SuccessfulCreate")]
    assert f.messages("MissingJob") == [f"Active job went missing: {gone['metadata']['name']}"]
    assert f.job_names() == [NOON_JOB]


def test_history_cleanup_of_a_job_already_gone_reports_nothing() -> None:
    f = Fixture(now=at("12:03"))
    cj = f.add_cronjob(new_cronjob(successfulJobsHistoryLimit=0, status={
        "lastScheduleTime": fmt(NOON)}))
    f.add_job(new_job(cj, NOON, finished="Complete"), server=False)

    f.sync()

    assert f.events() == []


# -- 5. restored CronJobs ------------------------------------------------------------------


def _restored(**status: Any) -> Any:
    # Hourly; the backup says the 10:00 run happened; restored (created) at 11:30.
    return new_cronjob(schedule="0 * * * *", created=at("11:30"),
                       status={"lastScheduleTime": fmt(at("10:00")), **status})


def test_restored_cronjob_without_observed_schedule_anchors_on_last_schedule_time() -> None:
    f = Fixture(now=at("11:35"))
    f.add_cronjob({**_restored(), "spec": {**_restored()["spec"], "suspend": True}})
    f.sync()  # first status write (suspended): records the observed schedule
    assert f.status()["observedSchedule"] == {"digest": schedule_digest("0 * * * *", "")}
    f.client.patch(CRONJOBS, "hello", {"spec": {"suspend": False}}, NAMESPACE)
    f.clock.set_time(at("11:40"))

    resync(f)

    # The 11:00 run is after lastScheduleTime: it runs (late), as upstream would.
    assert [j["metadata"]["name"] for j in f.created_jobs()] == [
        run_name("hello", at("11:00"))]


def test_restored_cronjob_with_old_since_equal_to_creation_is_no_edit() -> None:
    # Written by the previous version, which set since = creationTimestamp.
    f = Fixture(now=at("11:40"))
    f.add_cronjob(_restored(observedSchedule={
        "schedule": "0 * * * *", "timeZone": "", "since": fmt(at("11:30"))}))

    f.sync()

    assert [j["metadata"]["name"] for j in f.created_jobs()] == [
        run_name("hello", at("11:00"))]
    resync(f)  # the deferred status write rewrites observedSchedule in the new form
    assert f.status()["observedSchedule"] == {"digest": schedule_digest("0 * * * *", "")}
    assert f.status()["lastScheduleTime"] == fmt(at("11:00"))


def test_old_form_since_after_creation_is_still_an_edit() -> None:
    f = Fixture(now=at("11:40"))
    f.add_cronjob(_restored(observedSchedule={
        "schedule": "0 * * * *", "timeZone": "", "since": fmt(at("11:35"))}))

    f.sync()

    assert f.created_jobs() == []
    assert f.status()["observedSchedule"] == {
        "digest": schedule_digest("0 * * * *", ""), "since": fmt(at("11:35"))}
    assert f.status()["nextScheduleTime"] == fmt(at("12:00"))


def test_old_form_with_another_schedule_is_an_edit_now() -> None:
    f = Fixture(now=at("11:40"))
    f.add_cronjob(_restored(observedSchedule={
        "schedule": "30 * * * *", "timeZone": "", "since": fmt(at("11:30"))}))

    f.sync()

    assert f.created_jobs() == []
    assert f.status()["observedSchedule"]["since"] == fmt(at("11:40"))


# -- 6. nextScheduleTime never before the anchor, never a time that ran ----------------------


def test_next_schedule_time_is_never_before_creation() -> None:
    # This controller's clock is 50 minutes behind the API server that stamped creation.
    f = Fixture(now=at("09:30"))
    f.add_cronjob(new_cronjob(schedule="0 * * * *", created=at("10:20")))

    result = f.sync()

    assert f.created_jobs() == []
    assert f.status()["nextScheduleTime"] == fmt(at("11:00"))
    assert result is not None
    assert result.requeue_after == pytest.approx(90 * 60 + REQUEUE_SLACK_SECONDS)


def test_next_schedule_time_is_never_a_time_that_already_ran() -> None:
    # A previous leader, whose clock was ahead, already ran 12:00.
    f = Fixture(now=at("11:59", second=50))
    f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(NOON)}))

    result = f.sync()

    assert f.created_jobs() == []
    assert f.status()["nextScheduleTime"] == fmt(at("12:05"))
    assert result is not None
    assert result.requeue_after == pytest.approx(5 * 60 + 10 + REQUEUE_SLACK_SECONDS)


def test_next_schedule_time_is_after_a_recorded_run_whose_job_is_gone() -> None:
    f = Fixture(now=at("11:59", second=50))
    f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(at("11:55"))}))
    f.clock.set_time(at("12:00", second=1))
    f.sync()
    f.client.delete(JOBS, NOON_JOB, NAMESPACE)
    f.clock.set_time(at("11:59", second=59))  # NTP stepped the clock back

    resync(f)

    assert f.created_jobs() == []
    assert f.status()["nextScheduleTime"] == fmt(at("12:05"))


# -- 7. terminating namespace -------------------------------------------------------------


@pytest.mark.parametrize("err", [
    Forbidden('jobs.batch "hello-29552400" is forbidden: unable to create new content in '
              'namespace default because it is being terminated', 403, "Forbidden",
              {"causes": [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                           "message": "namespace default is being terminated"}]}),
    Forbidden("unable to create new content in namespace default because it is being "
              "terminated", 403, "Forbidden"),
])
def test_create_in_a_terminating_namespace_is_logged_not_reported(err: ApiError) -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob())
    f.client.prepend_reactor("create", JOBS, failing(err))

    result = f.sync()  # no raise: no rate-limited requeue storm

    assert f.events() == []
    assert result is not None
    assert result.requeue_after == pytest.approx(270 + REQUEUE_SLACK_SECONDS)


# -- 11b. bounded status --------------------------------------------------------------------


def test_status_write_is_bounded_for_a_huge_schedule() -> None:
    # Created with the webhook off; whether the controller's own check refuses it or not,
    # the status write must stay small.
    f = Fixture(defer_status_after_create=False)
    f.add_cronjob(new_cronjob(schedule="0" + ",0" * 50_000 + " * * * *"))  # ~100k chars

    f.sync()

    [patch] = [a.object for a in f.client.actions if a.verb == "patch"]
    assert len(orjson.dumps(patch)) < 4096
    assert len(f.ready()["message"]) <= MAX_MESSAGE_LENGTH
    assert all(len(e.message) <= MAX_MESSAGE_LENGTH for e in f.recorder.records)


def test_long_messages_are_truncated_with_an_ellipsis() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob())
    f.client.prepend_reactor("create", JOBS, failing(Invalid("x" * 50_000, 422, "Invalid")))

    f.sync()

    message = f.ready()["message"]
    assert len(message) == MAX_MESSAGE_LENGTH and message.endswith("\u2026")
    assert [len(m) for m in f.messages("FailedCreate")] == [MAX_MESSAGE_LENGTH]


# -- 13b. the API server rejects the Job (422) ----------------------------------------------


def test_invalid_job_is_reported_on_ready_once_without_a_hot_loop() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob())
    rejected = Invalid('Job.batch "hello-29552400" is invalid: spec.template.spec.containers'
                       '[0].image: Required value', 422, "Invalid")
    f.client.prepend_reactor("create", JOBS, failing(rejected))

    result = f.sync()  # no raise: a raise would requeue with backoff, forever

    assert f.events() == [("Warning", "FailedCreate")]
    assert rejected.message in f.messages("FailedCreate")[0]
    ready = f.ready()
    assert (ready["status"], ready["reason"]) == ("False", REASON_INVALID_JOB_TEMPLATE)
    assert rejected.message in ready["message"]
    assert result is not None
    assert result.requeue_after == pytest.approx(270 + REQUEUE_SLACK_SECONDS)

    for _ in range(3):  # our own status write (and anything else) brings the key back
        resync(f)
        assert f.actions() == [] and f.events() == []
    assert f.ready()["reason"] == REASON_INVALID_JOB_TEMPLATE


def test_invalid_job_is_retried_at_the_next_scheduled_time() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob())
    f.client.prepend_reactor("create", JOBS, failing(Invalid("bad", 422, "Invalid")))
    f.sync()
    f.clock.set_time(at("12:05", second=1))

    resync(f)

    assert f.actions() == [("create", "jobs", "hello-29552405", None), STATUS_PATCH]
    assert f.events() == [("Warning", "FailedCreate")]  # a new run: reported again


def test_invalid_job_is_retried_after_a_spec_edit() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob())
    outage = [True]

    def react(action: Action) -> None:
        if outage[0] and not action.options.get("dry_run"):
            raise Invalid("bad", 422, "Invalid")

    f.client.prepend_reactor("create", JOBS, react)
    f.sync()
    outage[0] = False
    f.client.patch(CRONJOBS, "hello", {"spec": {"jobTemplate": {"metadata": {
        "labels": {"fixed": "yes"}}}}}, NAMESPACE)

    resync(f)

    assert f.job_names() == [NOON_JOB]
    resync(f)
    assert f.ready()["status"] == "True"


# -- status writes are O(runs) --------------------------------------------------------------


def test_status_writes_follow_runs_not_seconds() -> None:
    f = Fixture(now=at("12:00", second=30))
    f.add_cronjob(new_cronjob(created=at("11:58")))
    f.settle()  # the 12:00 run and its status
    f.clear()
    patches = creates = 0
    for _ in range(360):  # an hour, a sync every 10 s (far more often than real life)
        f.clock.step(10)
        f.sync()
        f.refresh()
        creates += len(f.created_jobs())
        patches += len(f.status_writes())
        f.clear()

    assert creates == 12
    assert patches == 12  # one deferred status write per run, nothing in between



# -- wiring: a deleted Job's final state is recorded before its owner is enqueued ------------


class _RecordingRuns(RunRecord):
    """A RunRecord that logs each observed run into ``events``."""

    def __init__(self, events: list[tuple[str, str]]) -> None:
        super().__init__()
        self.events = events

    def observe(self, key: str, uid: str, scheduled: datetime) -> None:
        self.events.append(("observed", f"{key}@{fmt(scheduled)}"))
        super().observe(key, uid, scheduled)


def test_wiring_records_a_deleted_jobs_run_before_its_owner_is_reconciled() -> None:
    from cronjob_controller.wiring import build

    clock = FakeClock(NOW)
    client = FakeClient(clock)
    cj = client.add_object(CRONJOBS, new_cronjob(suspend=True))  # syncs create nothing
    client.add_object(JOBS, new_job(cj, NOON))
    manager = Manager(client, NO_RUNTIME_METRICS, clock=clock)
    wired = build(manager, namespaces=[NAMESPACE], workers=1)
    events: list[tuple[str, str]] = []
    reconcile = wired.reconciler.reconcile
    wired.reconciler.runs = _RecordingRuns(events)

    def recording_reconcile(request: Request) -> Result | None:
        events.append(("reconciled", str(request)))
        return reconcile(request)

    wired.reconciler.reconcile = recording_reconcile  # type: ignore[method-assign]
    with running(manager.run, name="manager"):
        eventually(lambda: len(wired.job_informers[0].get_store().list()) == 1,
                   what="the Job cached")
        client.delete(JOBS, NOON_JOB, NAMESPACE)
        observed = ("observed", f"{NAMESPACE}/hello@{fmt(NOON)}")
        eventually(lambda: observed in events
                   and ("reconciled", f"{NAMESPACE}/hello") in events[events.index(observed):],
                   what="the run recorded, then the owner reconciled")


# -- Jobs that vanish fast get their status written with the create ------------------------


def _with_ttl(ttl: int) -> Any:
    cj = new_cronjob(status={"lastScheduleTime": fmt(at("11:55"))})
    cj["spec"]["jobTemplate"]["spec"]["ttlSecondsAfterFinished"] = ttl
    return cj


@pytest.mark.parametrize("ttl", [0, 60])
def test_short_ttl_job_gets_its_status_write_in_the_same_sync(ttl: int) -> None:
    # A restart right after the create loses the in-memory record; the status must not
    # depend on it when the Job can be deleted within seconds.
    f = Fixture()
    f.add_cronjob(_with_ttl(ttl))

    f.sync()

    assert f.actions() == [("create", "jobs", NOON_JOB, None), STATUS_PATCH]
    assert f.status()["lastScheduleTime"] == fmt(NOON)
    assert [r["name"] for r in f.status()["active"]] == [NOON_JOB]


def test_long_ttl_job_keeps_the_deferred_status_write() -> None:
    f = Fixture()
    f.add_cronjob(_with_ttl(61))

    f.sync()

    assert f.actions() == [("create", "jobs", NOON_JOB, None)]


def test_old_jobs_of_a_recreated_cronjob_do_not_evict_the_new_record() -> None:
    # The new hello created 12:00; the garbage collector then deletes the old hello's Jobs.
    f = Fixture()
    old = new_cronjob()
    old["metadata"]["uid"] = "uid-of-the-old-hello"
    f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(at("11:55"))}))
    f.sync()
    f.reconciler.observe_deleted_job(new_job(old, at("11:50")))
    f.client.delete(JOBS, NOON_JOB, NAMESPACE)

    resync(f)

    assert f.created_jobs() == []
    assert f.status()["lastScheduleTime"] == fmt(NOON)
    resync(f)
    assert len(f.reconciler.runs) == 0  # the stale UID went with the first sync of the key


@pytest.mark.parametrize("policy", ["Replace", "Forbid"])
def test_a_sync_on_a_job_cache_older_than_its_own_create_waits_for_the_cache(
        policy: str) -> None:
    """The next run is due before the Job informer delivered the Job this process just
    created: acting on that cache, Replace would not delete it and Forbid would start a second
    run. The sync waits for the cache instead (client-go's expectations)."""
    f = Fixture()
    f.add_cronjob(new_cronjob(concurrencyPolicy=policy,
                              status={"lastScheduleTime": fmt(at("11:55"))}))
    f.sync()
    assert f.job_names() == [NOON_JOB]
    f.clear()
    f.clock.step(5 * 60)  # 12:05 is due; the cache still shows no Job
    assert f.sync() == Result(requeue_after=CACHE_WAIT_SECONDS)
    assert f.actions() == []
    resync(f)  # the informer caught up: now the policy acts on the noon Job
    if policy == "Replace":
        assert [name for name, _ in f.deletes()] == [NOON_JOB]
        assert len(f.created_jobs()) == 1
    else:
        assert f.created_jobs() == [] and f.deletes() == []


def test_the_cache_wait_ends_when_the_job_s_deletion_is_delivered() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(concurrencyPolicy="Forbid",
                              status={"lastScheduleTime": fmt(at("11:55"))}))
    f.sync()
    job = f.client.get(JOBS, NOON_JOB, NAMESPACE)
    f.client.delete(JOBS, NOON_JOB, NAMESPACE)
    f.reconciler.observe_deleted_job(job)
    f.clear()
    f.clock.step(5 * 60)
    f.sync()
    assert len(f.created_jobs()) == 1  # the noon run is over (deleted): 12:05 may start
