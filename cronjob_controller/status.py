"""CronJob status: rebuilt from the world, decided step by step, written once.

Contract:

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
* :func:`desired_status` is the status the plan asks for; its ``Ready`` condition is set
  among the conditions already there, as ``meta.SetStatusCondition`` does (another
  writer's conditions are kept; ``lastTransitionTime`` moves only when the status flips).
* :func:`status_patch` is what the status write sends: only the fields whose desired value
  differs from the cached status, so a field the sync did not decide about is never sent, and
  ``None`` (merge patch: remove) only for a field the cache shows set and the sync decided to
  clear (``nextScheduleTime`` when suspended or invalid, the old ``observedSchedule`` keys).
  Empty when the cached status already says everything: no write. The write itself carries
  the cached ``resourceVersion`` (statuswrite.py), so a status that changed since the cache
  saw it is never overwritten from the stale copy.

Nothing here writes to the API server or mutates a cached object.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

from cronjob_controller import api, jobs
from cronjob_controller.expectations import RunRecord
from cronjob_controller.reporting import truncate
from pyctrl import Clock
from pyctrl.kube import Object, format_time

__all__ = [
    "READY_SCHEDULED",
    "CompletedJob",
    "Plan",
    "Readiness",
    "desired_status",
    "latest",
    "meta",
    "observe_schedule",
    "rebuild",
    "schedule_digest",
    "status_patch",
]


@dataclass(frozen=True, slots=True)
class Readiness:
    """The ``Ready`` condition a sync decided on."""

    status: Literal["True", "False"]
    reason: str
    message: str = ""


READY_SCHEDULED = Readiness("True", api.REASON_SCHEDULED)


@dataclass(frozen=True, slots=True)
class CompletedJob:
    """A Job the status listed active that has finished since."""

    name: str
    condition: jobs.JobFinishedType | None


@dataclass
class Plan:
    """What one sync decided, built up step by step and written at the end."""

    active: list[Object]
    last_schedule: datetime | None
    last_successful: datetime | None
    next_schedule: datetime | None = None
    ready: Readiness = READY_SCHEDULED
    observed_schedule: dict[str, str | None] | None = None
    created: bool = False
    completed: list[CompletedJob] = field(default_factory=list)
    # status.active entries (name, uid) whose Job the cache does not hold.
    unlisted: list[tuple[str, str]] = field(default_factory=list)


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj``'s metadata (empty when missing)."""
    return cast(Mapping[str, Any], obj.get("metadata") or {})


def latest(*times: datetime | None) -> datetime | None:
    """The latest of the given times, ignoring None; None when none is given."""
    present = [t for t in times if t is not None]
    return max(present) if present else None


def schedule_digest(schedule_text: str, time_zone: str) -> str:
    """A fixed-size fingerprint of the (schedule, timeZone) pair for status.observedSchedule."""
    data = schedule_text.encode("utf-8", "surrogatepass") + b"\0" + time_zone.encode(
        "utf-8", "surrogatepass")
    return "sha256:" + hashlib.sha256(data).hexdigest()


def rebuild(key: str, raw: Object, status: Mapping[str, Any], owned: list[Object],
            runs: RunRecord, departed: Collection[str] = ()) -> Plan:
    """Status from the world (module docstring); ``owned``: the Jobs ``raw`` controls;
    ``departed``: UIDs of Jobs this controller deleted whose removal the cached status does
    not show yet."""
    previously_active = {ref.get("uid") for ref in status.get("active") or []}
    name, uid = str(meta(raw).get("name", "")), str(meta(raw).get("uid", ""))
    last_successful = api.parse_time(status.get("lastSuccessfulTime"))
    recorded = api.parse_time(status.get("lastScheduleTime"))
    # A run this process created or saw, whose Job may be gone already, counts until the
    # cached status records it (deferred status write; Job deleted in between).
    last_schedule = latest(recorded, runs.floor(key, uid, recorded))
    plan = Plan(active=[], last_schedule=None, last_successful=None)
    newest_job: datetime | None = None
    for job in owned:
        finished, how = jobs.is_job_finished(job)
        newest_job = latest(newest_job, jobs.scheduled_time_of(job, name))
        if not finished:
            # Departing (deletionTimestamp, kept by a finalizer): active only while the
            # status still lists it (a Forbid run still waits for it, as upstream's does);
            # once a status write dropped it (a Replace delete), never active again.
            job_uid = meta(job).get("uid")
            if (not meta(job).get("deletionTimestamp")
                    or (job_uid in previously_active and job_uid not in departed)):
                plan.active.append(job)
            continue
        if how == "Complete":
            last_successful = latest(last_successful, jobs.completion_time_of(job))
        if meta(job).get("uid") in previously_active:
            plan.completed.append(CompletedJob(str(meta(job).get("name")), how))
    owned_uids = {meta(job).get("uid") for job in owned}
    plan.unlisted = [(str(ref.get("name", "")), str(ref.get("uid", "")))
                     for ref in status.get("active") or []
                     if isinstance(ref, Mapping) and ref.get("uid") not in owned_uids]
    if newest_job is not None and (recorded is None or newest_job > recorded):
        runs.observe(key, uid, newest_job)
    plan.last_schedule = latest(last_schedule, newest_job)
    plan.last_successful = last_successful
    return plan


def observe_schedule(raw: Object, status: Mapping[str, Any],
                     now: datetime) -> tuple[dict[str, str | None], datetime | None]:
    """The ``observedSchedule`` to write, and the time of the last schedule/timeZone edit.

    ``status.observedSchedule`` holds a fixed-size ``digest`` of the pair (never the
    unbounded spec text) and ``since``, set only when a sync saw the pair change. The edit
    time is now when this sync is the first to see the change, or None when no edit is known:
    a pair seen for the first time (a new or restored CronJob) is not an edit, so an unedited
    schedule anchors on lastScheduleTime.

    The previous version stored ``schedule``/``timeZone`` verbatim and ``since`` =
    creationTimestamp for an unedited pair; that form is still read (``since`` at or before
    creation is no edit), and rewritten in the new form (old keys nulled).
    """
    raw_spec = raw.get("spec")
    spec = cast(Mapping[str, Any], raw_spec if isinstance(raw_spec, Mapping) else {})
    schedule_text = str(spec.get("schedule") or "")
    zone = str(spec.get("timeZone") or "")
    digest = schedule_digest(schedule_text, zone)
    observed = status.get("observedSchedule")
    since: datetime | None = None
    desired: dict[str, str | None] = {"digest": digest}
    if isinstance(observed, Mapping):
        if "digest" in observed:
            same = observed.get("digest") == digest
        else:
            same = (observed.get("schedule") == schedule_text
                    and (observed.get("timeZone") or "") == zone)
        since = api.parse_time(observed.get("since")) if same else now
        created = api.parse_time(meta(raw).get("creationTimestamp"))
        if same and since is not None and created is not None and since <= created:
            since = None  # the old form's "since creation": not an edit
        for old_key in ("schedule", "timeZone", "since"):
            if old_key in observed:
                desired[old_key] = None  # merge patch: remove what is not desired
    if since is not None:
        desired["since"] = format_time(since)
    return desired, since


def desired_status(raw: Object, status: Mapping[str, Any], plan: Plan,
                   clock: Clock) -> dict[str, Any]:
    """The whole status ``plan`` asks for (``None``: the field is cleared)."""
    active = sorted(
        (api.ObjectReference.for_job(j).to_dict() for j in plan.active),
        key=lambda r: str(r["name"]),
    )
    for ref in active:
        ref.pop("resourceVersion", None)  # changes on every Job write; not worth a patch
    desired: dict[str, Any] = {
        "active": active,
        "activeCount": len(active),
        "lastScheduleTime": _fmt(plan.last_schedule),
        "lastSuccessfulTime": _fmt(plan.last_successful),
        "nextScheduleTime": _fmt(plan.next_schedule),
        "observedGeneration": meta(raw).get("generation"),
        "conditions": conditions_with_ready(status, plan.ready, clock),
    }
    if plan.observed_schedule is not None:
        desired["observedSchedule"] = plan.observed_schedule
    return desired


def conditions_with_ready(status: Mapping[str, Any], ready: Readiness,
                          clock: Clock) -> list[dict[str, Any]]:
    """The cached conditions (copied) with ``Ready`` set to ``ready``; its transition time is
    kept from the cache unless the status flips (an unreadable one is set afresh)."""
    conditions: list[dict[str, Any]] = []
    found = False
    for cached in status.get("conditions") or []:
        if not isinstance(cached, Mapping):
            continue
        cond = copy.deepcopy(dict(cached))
        if cond.get("type") == api.CONDITION_READY:
            since = api.parse_time(cond.get("lastTransitionTime"))
            if since is None or found:
                continue  # unreadable (or a duplicate): set afresh below
            found = True
            if cond.get("status") != ready.status:
                since = clock.now()
            cond.update(status=ready.status, reason=ready.reason,
                        message=truncate(ready.message), lastTransitionTime=format_time(since))
        conditions.append(cond)
    if not found:
        conditions.append({"type": api.CONDITION_READY, "status": ready.status,
                           "reason": ready.reason, "message": truncate(ready.message),
                           "lastTransitionTime": format_time(clock.now())})
    return conditions


def _fmt(t: datetime | None) -> str | None:
    return format_time(t) if t is not None else None


def _comparable(key: str, value: Any) -> Any:
    if key == "active":
        return sorted(
            ({k: v for k, v in ref.items() if k != "resourceVersion"} for ref in value or []),
            key=lambda r: str(r.get("name")),
        )
    if key == "observedSchedule" and isinstance(value, Mapping):
        return {k: v for k, v in value.items() if v is not None}  # None = remove
    return value


def status_patch(current: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``desired`` that ``current`` (the cached status) does not say yet.

    An unset field and an empty one (``[]``, ``0``) mean the same: filling one in alone is no
    reason to write, but it rides along with a write that happens anyway (a new CronJob's
    first status shows ``activeCount: 0``).
    """
    patch: dict[str, Any] = {}
    needed = False
    for key, wanted in desired.items():
        have = current.get(key)
        if have is None:
            if wanted is not None:  # never send null for a field that is not set
                patch[key] = wanted
                needed = needed or wanted not in ([], 0)
        elif _comparable(key, have) != _comparable(key, wanted):
            patch[key] = wanted
            needed = True
    return patch if needed else {}
