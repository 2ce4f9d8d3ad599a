"""CronJob status: rebuilt from the world, decided step by step, written once.

Contract (every object typed: the cached :class:`~cronjob_controller.crd.CronJob` and
``pyctrl.models`` Jobs; nothing here writes to the API server or changes a cached object):

* :func:`rebuild` is step 2 of the sync (controller.py): from the cached CronJob and the Jobs
  it controls it returns a :class:`Plan` holding ``active`` (our unfinished Jobs; one with a
  ``deletionTimestamp``, kept by a finalizer after a delete, only while the status still lists
  it and this controller did not delete it: a Forbid run still waits for a Job a user
  deletes, as upstream's does, but a Job a Replace deleted is never active again),
  ``lastSuccessfulTime`` (the latest completion among our Complete Jobs, never going
  backwards) and ``lastScheduleTime`` (the latest of the recorded value, our Jobs' scheduled
  times and the run record's floor), plus the Jobs that finished since the status listed them
  active (for ``SawCompletedJob``) and the ``status.active`` entries whose Job the cache does
  not hold (``unlisted``: maybe a ``MissingJob``). It notes the newest Job's run in the run
  record.
* :func:`observe_schedule` decides ``status.observedSchedule``: a fixed-size digest of
  (schedule, timeZone) (:func:`schedule_digest`) and ``since``, the time of the last edit.
* :func:`desired_status` is the typed status the plan asks for, times in whole UTC seconds;
  its ``Ready`` condition is set among the conditions already there
  (``pyctrl.conditions.set_status_condition``: another writer's conditions are kept,
  ``lastTransitionTime`` moves only when the status flips). An ``observedSchedule`` the sync
  did not decide on is kept.
* :func:`status_changes` is what the status write sends (``pyctrl.api.status_changes`` of
  the encoded cached and desired status): only the fields whose desired value differs, a
  field that only moves between unset and empty riding along with a write that happens
  anyway, ``None`` (merge patch: remove) only for a field the cache shows set and the sync
  decided to clear (``nextScheduleTime`` when suspended or invalid, the old
  ``observedSchedule`` keys). ``status.active`` entries compare by name, namespace and UID
  (``resourceVersion``, changed by every Job write, is never written). Empty when the cached
  status already says everything: no write.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from cronjob_controller import jobs
from cronjob_controller.constants import CONDITION_READY, REASON_SCHEDULED
from cronjob_controller.crd import CronJob, CronJobStatus, JobReference, ObservedSchedule
from cronjob_controller.expectations import RunRecord
from cronjob_controller.reporting import truncate
from pyctrl import Clock, api
from pyctrl.conditions import set_status_condition
from pyctrl.kube import meta
from pyctrl.models.batch_v1 import Job

__all__ = [
    "READY_SCHEDULED",
    "CompletedJob",
    "Plan",
    "Readiness",
    "desired_status",
    "latest",
    "observe_schedule",
    "rebuild",
    "schedule_digest",
    "status_changes",
]


@dataclass(frozen=True, slots=True)
class Readiness:
    """The ``Ready`` condition a sync decided on."""

    status: Literal["True", "False"]
    reason: str
    message: str = ""


READY_SCHEDULED = Readiness("True", REASON_SCHEDULED)


@dataclass(frozen=True, slots=True)
class CompletedJob:
    """A Job the status listed active that has finished since."""

    name: str
    condition: jobs.JobFinishedType | None


@dataclass
class Plan:
    """What one sync decided, built up step by step and written at the end."""

    active: list[Job]
    last_schedule: datetime | None
    last_successful: datetime | None
    next_schedule: datetime | None = None
    ready: Readiness = READY_SCHEDULED
    observed_schedule: ObservedSchedule | None = None
    created: bool = False
    completed: list[CompletedJob] = field(default_factory=list)
    # status.active entries (name, uid) whose Job the cache does not hold.
    unlisted: list[tuple[str, str]] = field(default_factory=list)


def latest(*times: datetime | None) -> datetime | None:
    """The latest of the given times, ignoring None; None when none is given."""
    present = [t for t in times if t is not None]
    return max(present) if present else None


def schedule_digest(schedule_text: str, time_zone: str) -> str:
    """A fixed-size fingerprint of the (schedule, timeZone) pair for status.observedSchedule."""
    data = schedule_text.encode("utf-8", "surrogatepass") + b"\0" + time_zone.encode(
        "utf-8", "surrogatepass")
    return "sha256:" + hashlib.sha256(data).hexdigest()


def rebuild(key: str, cronjob: CronJob, owned: list[Job], runs: RunRecord,
            departed: Collection[str] = ()) -> Plan:
    """Status from the world (module docstring); ``owned``: the Jobs ``cronjob`` controls;
    ``departed``: UIDs of Jobs this controller deleted whose removal the cached status does
    not show yet."""
    status = cronjob.status
    previously_active = {ref.uid for ref in status.active or ()}
    name, uid = cronjob.metadata.name, cronjob.metadata.uid
    last_successful = status.last_successful_time
    recorded = status.last_schedule_time
    # A run this process created or saw, whose Job may be gone already, counts until the
    # cached status records it (deferred status write; Job deleted in between).
    last_schedule = latest(recorded, runs.floor(key, uid, recorded))
    plan = Plan(active=[], last_schedule=None, last_successful=None)
    newest_job: datetime | None = None
    for job in owned:
        finished, how = jobs.is_job_finished(job)
        newest_job = latest(newest_job, jobs.scheduled_time_of(job, name))
        job_uid = job.metadata.uid
        if not finished:
            # Departing (deletionTimestamp, kept by a finalizer): active only while the
            # status still lists it (a Forbid run still waits for it, as upstream's does);
            # once a status write dropped it (a Replace delete), never active again.
            if (job.metadata.deletion_timestamp is None
                    or (job_uid in previously_active and job_uid not in departed)):
                plan.active.append(job)
            continue
        if how == "Complete":
            last_successful = latest(last_successful, jobs.completion_time_of(job))
        if job_uid in previously_active:
            plan.completed.append(CompletedJob(job.metadata.name, how))
    owned_uids = {job.metadata.uid for job in owned}
    plan.unlisted = [(ref.name, ref.uid) for ref in status.active or ()
                     if ref.uid not in owned_uids]
    if newest_job is not None and (recorded is None or newest_job > recorded):
        runs.observe(key, uid, newest_job)
    plan.last_schedule = latest(last_schedule, newest_job)
    plan.last_successful = last_successful
    return plan


def observe_schedule(cronjob: CronJob,
                     now: datetime) -> tuple[ObservedSchedule, datetime | None]:
    """The ``observedSchedule`` to write, and the time of the last schedule/timeZone edit.

    ``status.observedSchedule`` holds a fixed-size ``digest`` of the pair (never the
    unbounded spec text) and ``since``, set only when a sync saw the pair change. The edit
    time is now when this sync is the first to see the change, or None when no edit is known:
    a pair seen for the first time (a new or restored CronJob) is not an edit, so an unedited
    schedule anchors on lastScheduleTime.

    The previous version stored ``schedule``/``timeZone`` verbatim and ``since`` =
    creationTimestamp for an unedited pair; that form is still read (``since`` at or before
    creation is no edit), and rewritten in the new form (old keys removed).
    """
    schedule_text = cronjob.spec.schedule
    zone = cronjob.spec.time_zone or ""
    digest = schedule_digest(schedule_text, zone)
    observed = cronjob.status.observed_schedule
    since: datetime | None = None
    if observed is not None:
        if observed.digest:
            same = observed.digest == digest
        else:
            same = observed.schedule == schedule_text and (observed.time_zone or "") == zone
        since = observed.since if same else now
        created = cronjob.metadata.creation_timestamp
        if same and since is not None and created is not None and since <= created:
            since = None  # the old form's "since creation": not an edit
    return ObservedSchedule(digest=digest, since=_utc(since)), since


def desired_status(cronjob: CronJob, plan: Plan, clock: Clock) -> CronJobStatus:
    """The whole status ``plan`` asks for (None: the field is cleared)."""
    active = sorted((JobReference(api_version="batch/v1", kind="Job", name=j.metadata.name,
                                  namespace=j.metadata.namespace, uid=j.metadata.uid)
                     for j in plan.active), key=lambda r: r.name)
    ready = plan.ready
    return CronJobStatus(
        active=active,
        active_count=len(active),
        last_schedule_time=_utc(plan.last_schedule),
        last_successful_time=_utc(plan.last_successful),
        next_schedule_time=_utc(plan.next_schedule),
        observed_schedule=(cronjob.status.observed_schedule if plan.observed_schedule is None
                           else plan.observed_schedule),
        observed_generation=meta.generation(cronjob),
        conditions=set_status_condition(cronjob.status.conditions, CONDITION_READY,
                                        ready.status, ready.reason, truncate(ready.message),
                                        clock=clock),
    )


def _utc(t: datetime | None) -> datetime | None:
    """``t`` as metav1.Time holds it: UTC, whole seconds."""
    return t.astimezone(UTC).replace(microsecond=0) if t is not None else None


def _same(key: str, old: Any, new: Any) -> bool:
    if key == "active":
        return _refs(old) == _refs(new)
    return api.unset_equals_empty(key, old, new)


def _refs(value: Any) -> list[dict[str, Any]]:
    return sorted(({k: v for k, v in ref.items() if k != "resourceVersion"}
                   for ref in value or () if isinstance(ref, Mapping)),
                  key=lambda r: str(r.get("name")))


def status_changes(cached: CronJobStatus, desired: CronJobStatus) -> dict[str, Any]:
    """The merge patch body of the status write (module docstring); ``{}``: no write."""
    return api.status_changes(api.encode(cached), api.encode(desired), equal=_same)
