"""MissingJob like upstream (issue 27 item 4): a Job the status lists active that no longer
exists gives one Normal ``MissingJob`` event "Active job went missing: NAME" and leaves
``active``; no storm, no hot loop. Jobs we deleted, or saw finish before they vanished, are
not missing; a Job the cache has not caught up with is asked of the API server. A Job being
deleted (``deletionTimestamp``, kept by a finalizer) is departing: not active, not deleted
again by a Replace, not missing when it goes (issue 35 item 8)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cronjob_controller.api import CRONJOBS
from pyctrl.kube import JOBS
from tests.unit.cronjob.sync_fixture import NAMESPACE, Fixture, at, fmt, new_cronjob, new_job

RUN = at("11:55")
RUN_JOB = "hello-29552395"
NOON_JOB = "hello-29552400"
STATUS_PATCH = ("patch", "cronjobs", "hello", "status")
GET_RUN_JOB = ("get", "jobs", RUN_JOB, None)


def _active_run(f: Fixture, **spec: Any) -> Any:
    """A CronJob whose status lists the 11:55 Job active, settled at 11:57."""
    f.clock.set_time(at("11:57"))
    cj = f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(RUN)}, **spec))
    job = f.add_job(new_job(cj, RUN))
    f.settle()
    assert [r["name"] for r in f.status()["active"]] == [RUN_JOB]
    return job


def _vanish(f: Fixture) -> None:
    f.client.delete(JOBS, RUN_JOB, NAMESPACE)
    f.refresh()
    f.clear()


def test_active_job_deleted_by_hand_is_reported_missing_once_and_leaves_active() -> None:
    f = Fixture()
    _active_run(f)
    _vanish(f)

    result = f.sync()

    assert f.events() == [("Normal", "MissingJob")]
    assert f.messages("MissingJob") == [f"Active job went missing: {RUN_JOB}"]
    assert f.actions() == [GET_RUN_JOB, STATUS_PATCH]
    assert f.status()["active"] == []
    assert result is not None and result.requeue_after is not None  # the next run, no sooner
    assert result.requeue_after > 60

    f.refresh()
    f.clear()
    f.sync()
    assert f.events() == [] and f.actions() == []


def test_missing_job_is_reported_once_across_a_deferred_status_write() -> None:
    f = Fixture()
    _active_run(f)
    _vanish(f)
    f.clock.set_time(at("12:00", second=30))

    f.sync()  # reports the missing Job, creates the noon run, defers the status write
    f.refresh()
    f.sync()  # the cached status still lists the missing Job
    f.refresh()
    f.sync()

    assert [e for e in f.events() if e[1] == "MissingJob"] == [("Normal", "MissingJob")]
    assert [r["name"] for r in f.status()["active"]] == [NOON_JOB]
    assert f.actions().count(GET_RUN_JOB) == 1


def test_job_the_cache_has_not_caught_up_with_is_not_missing() -> None:
    f = Fixture()
    _active_run(f)
    f.job_indexer.replace([])  # the server still has it
    f.clear()

    f.sync()

    assert f.events() == []
    assert f.actions() == [GET_RUN_JOB]  # asked; no status write drops it from active
    assert [r["name"] for r in f.status()["active"]] == [RUN_JOB]


def test_job_replaced_by_the_controller_is_not_missing() -> None:
    f = Fixture()
    _active_run(f, concurrencyPolicy="Replace")
    f.clock.set_time(at("12:00", second=30))

    f.sync()  # deletes the 11:55 Job, creates the noon one, defers the status write
    f.refresh()
    f.sync()

    assert f.events() == [("Normal", "SuccessfulDelete"), ("Normal", "SuccessfulCreate")]
    assert GET_RUN_JOB not in f.actions()
    assert [r["name"] for r in f.status()["active"]] == [NOON_JOB]


def test_job_that_finished_before_it_vanished_is_not_missing() -> None:
    # ttlSecondsAfterFinished: 0 deletes a finished Job at once; the informer delivers its
    # final state, finished, before the owner's sync.
    f = Fixture()
    job = _active_run(f)
    final = copy.deepcopy(job)
    final["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
    final["status"]["completionTime"] = fmt(at("11:56"))
    _vanish(f)
    f.reconciler.observe_deleted_job(final)

    f.sync()

    assert f.events() == []
    assert GET_RUN_JOB not in f.actions()
    assert f.status()["active"] == []


def test_job_deleted_by_history_while_the_cronjob_cache_lags_is_not_missing() -> None:
    # The memory soak's false MissingJob (1 run in 15 under load). The status write that
    # listed the noon Job active reached the server, but the CronJob informer lags: the cache
    # still holds the status before it. Meanwhile the Job informer shows the noon and 12:05
    # runs complete, so history cleanup (limit 1) deletes the noon Job; the Job informer
    # delivers the deletion (a sync, the cache still stale); then the CronJob cache catches up
    # with the status that lists the deleted Job active.
    f = Fixture()
    f.clock.set_time(at("12:05", second=30))
    cj = f.add_cronjob(new_cronjob(schedule="*/5 * * * *", successfulJobsHistoryLimit=1,
                                   status={"lastScheduleTime": fmt(RUN)}))
    noon = f.add_job(new_job(cj, at("12:00"), finished="Complete"))
    f.add_job(new_job(cj, at("12:05"), finished="Complete"))
    listed = {"apiVersion": "batch/v1", "kind": "Job", "namespace": NAMESPACE,
              "name": NOON_JOB, "uid": noon["metadata"]["uid"]}
    f.client.patch(CRONJOBS, "hello", {"status": {
        "active": [listed], "lastScheduleTime": fmt(at("12:00"))}}, NAMESPACE,
        subresource="status")  # the server's status; the CronJob cache keeps the older one

    f.sync()  # stale cache: deletes the noon Job by history; the status write gets a 409
    assert f.deletes() and f.deletes()[0][0] == NOON_JOB
    assert [r["name"] for r in f.status()["active"]] == [NOON_JOB]  # the write got a 409
    f.job_indexer.replace(f.client.list_objects(JOBS))  # the Job informer: the deletion
    f.sync()  # the CronJob cache still stale: lists nothing, the noon Job not among it
    f.refresh()  # the CronJob cache catches up: its status lists the deleted noon Job
    f.sync()

    assert [e for e in f.events() if e[1] == "MissingJob"] == []
    assert GET_RUN_JOB not in f.actions() and ("get", "jobs", NOON_JOB, None) not in f.actions()
    assert f.status()["active"] == []
    f.refresh()
    f.clear()
    f.sync()
    assert f.events() == [] and f.actions() == []


def _replace_kept_by_a_finalizer(f: Fixture) -> Any:
    """A Replace CronJob whose 11:55 Job carries a finalizer: the noon sync deletes it, and it
    stays (with a deletionTimestamp) next to the noon Job. Returns its last state."""
    f.clock.set_time(at("11:57"))
    cj = f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(RUN)},
                                   concurrencyPolicy="Replace"))
    job = new_job(cj, RUN)
    job["metadata"]["finalizers"] = ["example.com/hold"]
    f.add_job(job)
    f.settle()
    f.clock.set_time(at("12:00", second=30))
    f.sync()  # deletes the 11:55 Job (kept by its finalizer), creates the noon one
    f.refresh()
    kept = f.client.get_object(JOBS, RUN_JOB, NAMESPACE)
    assert kept["metadata"].get("deletionTimestamp")  # departing, not gone
    return kept


@pytest.mark.parametrize("defer", [True, False], ids=["deferred-write", "immediate-write"])
def test_job_kept_by_a_finalizer_after_a_replace_is_not_active_again_nor_missing(
        defer: bool) -> None:
    # Issue 35 item 8: the departing Job was listed active again by the next sync, and when
    # its finalizer went it was reported MissingJob though we had deleted it.
    f = Fixture(defer_status_after_create=defer)
    kept = _replace_kept_by_a_finalizer(f)

    f.settle()  # the deferred status write, then the steady state

    assert [r["name"] for r in f.status()["active"]] == [NOON_JOB]
    assert f.client.get_object(JOBS, RUN_JOB, NAMESPACE)["metadata"].get("deletionTimestamp")

    f.client.patch(JOBS, RUN_JOB, {"metadata": {"finalizers": None}}, NAMESPACE)  # it goes
    f.reconciler.observe_deleted_job(kept)  # the informer's final state, still unfinished
    f.refresh()
    f.clear()
    f.sync()

    assert f.events() == []
    assert GET_RUN_JOB not in f.actions()
    assert [r["name"] for r in f.status()["active"]] == [NOON_JOB]


def test_job_kept_by_a_finalizer_is_not_deleted_again_by_the_next_replace() -> None:
    f = Fixture()
    _replace_kept_by_a_finalizer(f)
    f.settle()
    f.clock.set_time(at("12:05", second=30))

    f.sync()

    assert [name for name, _ in f.deletes()] == [NOON_JOB]
    assert f.events() == [("Normal", "SuccessfulDelete"), ("Normal", "SuccessfulCreate")]


def test_job_the_cache_has_not_caught_up_with_is_not_active_once_it_is_being_deleted() -> None:
    # The API server's answer for a status.active entry the cache lacks: the Job is there but
    # departing (deletionTimestamp, kept by a finalizer), so it is neither active nor missing.
    f = Fixture()
    f.clock.set_time(at("11:57"))
    cj = f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(RUN)}))
    job = new_job(cj, RUN)
    job["metadata"]["finalizers"] = ["example.com/hold"]
    f.add_job(job)
    f.settle()
    f.client.delete(JOBS, RUN_JOB, NAMESPACE)  # stays, with a deletionTimestamp
    f.refresh()
    f.job_indexer.replace([])  # the Job cache lags the server
    f.clear()

    f.sync()

    assert f.events() == []
    assert f.actions() == [GET_RUN_JOB, STATUS_PATCH]
    assert f.status()["active"] == []


def test_job_a_user_deletes_behind_a_finalizer_still_holds_a_forbid_run() -> None:
    # As upstream: a Job still listed active and not deleted by us stays active while a
    # finalizer keeps it, so Forbid does not start the next run next to its pods.
    f = Fixture()
    f.clock.set_time(at("11:57"))
    cj = f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(RUN)},
                                   concurrencyPolicy="Forbid"))
    job = new_job(cj, RUN)
    job["metadata"]["finalizers"] = ["example.com/hold"]
    f.add_job(job)
    f.settle()
    f.client.delete(JOBS, RUN_JOB, NAMESPACE)  # a user; the finalizer keeps it
    f.refresh()
    f.clock.set_time(at("12:00", second=30))
    f.clear()

    f.sync()

    assert not [a for a in f.actions() if a[0] == "create"], "Forbid: no noon run yet"
    assert [r["name"] for r in f.status()["active"]] == [RUN_JOB]
