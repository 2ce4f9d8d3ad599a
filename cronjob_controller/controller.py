"""The level-triggered CronJob sync (the behaviour contract is CRONJOB.md).

Contract of :meth:`CronJobReconciler.reconcile` (one CronJob key, ``namespace/name``):

1. Read the CronJob and the Jobs it controls (by owner UID, through an index) from the
   informer caches; never LIST. A missing CronJob ends the sync (its Jobs are garbage
   collected by the API server through their controller ownerReference).
2. Rebuild status from the world: ``active`` = our unfinished Jobs; ``lastSuccessfulTime`` =
   the latest completion among our Complete Jobs (never going backwards); ``lastScheduleTime``
   = the latest of the recorded value, the scheduled times of our Jobs (annotation, else the
   name's minute suffix) and the run record (:class:`RunRecord`: runs this process created or
   saw, deleted Jobs included, that the cached status does not show yet), so a status write
   that was lost or deferred is recovered, and a run whose Job vanished is never created again.
3. History cleanup (runs even when suspended), then stop if deleting, invalid or suspended.
4. Find the most recent due time ``t`` (anchor < t <= now), apply the starting deadline, the
   concurrency policy, and create the Job named ``<name>-<unix minutes of t>``. The name is
   deterministic, so a restarted controller or a second replica can never create a run twice;
   AlreadyExists for a Job we control counts as success; a foreign Job holding the name is
   reported (UnexpectedJob) and left alone.
5. Write status once, only when it changed, as a merge patch of the status subresource.

Critical path. At a minute tick thousands of CronJobs come due at once. What makes a Job exist
is one write (the create); the status write and the events can wait. So a sync that created a
Job returns without writing status: the Job's ADDED event from the informer enqueues the
CronJob again, and that second sync, queued behind every CronJob still waiting for its create
(the queue is FIFO), rebuilds and writes the status (step 2 recovers lastScheduleTime from
the Job, or from the run record if the Job is already gone). A template with
``ttlSecondsAfterFinished`` <= EAGER_STATUS_TTL_SECONDS gets the status write with the create
(its Job may vanish before a deferred write, and the record does not survive a restart).
Events go through the recorder's background sink and never block a worker. Condition and
event messages are cut to MAX_MESSAGE_LENGTH; status holds a digest of the schedule, never a
copy, so a status write never fails on size.

Invalid specs (bad schedule, unknown zone, missing template, overlong name) get a Warning
event and a ``Ready=False`` condition naming the problem, once per distinct problem, and no
requeue: only a change of the object (an informer event) brings the key back, so a broken
CronJob can not hot-loop. Likewise a Job the API server rejects as invalid (422): Ready=False
``InvalidJobTemplate``, FailedCreate once, retried only after a spec edit or at the next
scheduled time. A create refused because the namespace is terminating is only logged.
The next scheduled time (status and requeue) is always after the anchor.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any, Protocol, cast

import structlog
from prometheus_client import CollectorRegistry, Histogram

from cronjob_controller import api, jobs, schedule
from cronjob_controller.expectations import RunRecord
from pyctrl import Clock, RealClock, Result, controller_of
from pyctrl.cache import CONTROLLER_UID_INDEX, DeletedFinalStateUnknown, split_meta_namespace_key
from pyctrl.errors import AlreadyExists, ApiError, Forbidden, Invalid, NotFound
from pyctrl.kube import JOBS, Client, Object
from pyctrl.record import EventRecorder
from pyctrl.serving import per_registry

__all__ = [
    "EAGER_STATUS_TTL_SECONDS",
    "MAX_MESSAGE_LENGTH",
    "REASON_INVALID_JOB_TEMPLATE",
    "REQUEUE_SLACK_SECONDS",
    "CronJobReconciler",
    "ObjectSource",
    "skew_histogram",
]

log = structlog.get_logger(__name__)

# Requeue this little after the due time. Upstream adds 100 ms; every run then starts 100 ms
# late, which is the whole of the skew of a small CronJob fleet. The delaying queue waits on
# the monotonic clock and the due time is wall-clock, so a slewing wall clock can wake a sync
# a hair early: it finds nothing due and requeues for the rest (one cheap extra sync, never a
# missed run; the unit test test_early_wake_requeues_for_the_rest shows it).
REQUEUE_SLACK_SECONDS = 0.005
# A sync that finds the Job cache behind its own last create retries after this (the Job's
# ADDED event usually brings the key back sooner).
CACHE_WAIT_SECONDS = 1.0
# Upstream kube-controller-manager's buckets (ExponentialBuckets(1, 2, 10)), so alerts match.
_SKEW_BUCKETS = tuple(float(2**i) for i in range(10))  # 1, 2, 4, ..., 512 s
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Condition and event messages are cut to this many characters (the CRD allows 32768 for a
# condition message; an apiserver error or a schedule echoed in a message can be longer).
MAX_MESSAGE_LENGTH = 1024
# Ready=False reason when the API server rejects the Job built from the template (422).
REASON_INVALID_JOB_TEMPLATE = "InvalidJobTemplate"
# A Forbidden create whose cause is this: the namespace is being deleted (NamespaceLifecycle).
_NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"


def truncate(message: str, limit: int = MAX_MESSAGE_LENGTH) -> str:
    """``message`` cut to ``limit`` characters, the cut marked with an ellipsis."""
    return message if len(message) <= limit else message[:limit - 1] + "\u2026"


def schedule_digest(schedule_text: str, time_zone: str) -> str:
    """A fixed-size fingerprint of the (schedule, timeZone) pair for status.observedSchedule."""
    data = schedule_text.encode("utf-8", "surrogatepass") + b"\0" + time_zone.encode(
        "utf-8", "surrogatepass")
    return "sha256:" + hashlib.sha256(data).hexdigest()


# Jobs whose template deletes them this soon after they finish get the status write in the
# same sync as their create: such a Job may be gone before a deferred write, and the in-memory
# run record does not survive a controller restart (CRONJOB.md, "No run twice").
EAGER_STATUS_TTL_SECONDS = 60


def _vanishes_fast(raw: Object) -> bool:
    spec = raw.get("spec")
    template = spec.get("jobTemplate") if isinstance(spec, Mapping) else None
    job_spec = template.get("spec") if isinstance(template, Mapping) else None
    ttl = job_spec.get("ttlSecondsAfterFinished") if isinstance(job_spec, Mapping) else None
    return (isinstance(ttl, int) and not isinstance(ttl, bool)
            and ttl <= EAGER_STATUS_TTL_SECONDS)


def _namespace_terminating(err: ApiError) -> bool:
    if not isinstance(err, Forbidden):
        return False
    return (any(c.reason == _NAMESPACE_TERMINATING_CAUSE for c in err.causes)
            or "because it is being terminated" in err.message)


class ObjectSource(Protocol):
    """What the reconciler reads from: a Lister (or several merged)."""

    def get(self, namespace: str | None, name: str) -> Object: ...

    def by_index(self, index: str, value: str) -> Sequence[Object]: ...


def _new_skew_histogram(registry: CollectorRegistry | None) -> Histogram:
    return Histogram(
        "cronjob_controller_cronjob_job_creation_skew_duration_seconds",
        "Seconds between a run's scheduled time and the creation of its Job.",
        buckets=_SKEW_BUCKETS,
        registry=registry,
    )


_skew_histograms = per_registry(_new_skew_histogram)


def skew_histogram(registry: CollectorRegistry | None) -> Histogram | None:
    """The ``cronjob_controller_cronjob_job_creation_skew_duration_seconds`` histogram of
    ``registry`` (registered once per registry), or ``None`` without a registry."""
    return None if registry is None else _skew_histograms(registry)


@dataclass
class _Plan:
    """What one sync decided, built up step by step and written at the end."""

    active: list[Object]
    last_schedule: datetime | None
    last_successful: datetime | None
    next_schedule: datetime | None = None
    ready: tuple[str, str, str] = ("True", api.REASON_SCHEDULED, "")
    observed_schedule: dict[str, str | None] | None = None
    created: bool = False
    notes: list[str] = field(default_factory=list)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return cast(Mapping[str, Any], obj.get("metadata") or {})


def _latest(*times: datetime | None) -> datetime | None:
    present = [t for t in times if t is not None]
    return max(present) if present else None


def _age_key(job: Object) -> tuple[datetime, datetime]:
    """Oldest first: by start time (1 s resolution), ties broken by the scheduled time."""
    status = job.get("status") or {}
    created = api.parse_time(_meta(job).get("creationTimestamp")) or _EPOCH
    started = api.parse_time(status.get("startTime")) or created
    return started, jobs.scheduled_time_of(job) or created


class CronJobReconciler:
    """Reconciles CronJob keys into Jobs (see module docstring)."""

    def __init__(
        self,
        client: Client,
        cronjobs: ObjectSource,
        job_source: ObjectSource,
        recorder: EventRecorder,
        *,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        defer_status_after_create: bool = True,
    ) -> None:
        self.client = client
        self.cronjobs = cronjobs
        self.jobs = job_source
        self.recorder = recorder
        self.clock: Clock = clock or RealClock()
        self.defer_status_after_create = defer_status_after_create
        self._skew = skew_histogram(registry)
        # (key, reason) -> the last message reported, so each distinct problem is reported
        # once instead of on every sync; cleared when the CronJob goes away.
        self._reported: dict[tuple[str, str], str] = {}
        self._reported_lock = threading.Lock()
        # Runs created or seen that the cached status may not record yet (no run twice).
        self.runs = RunRecord()
        # key -> (uid, generation, scheduled time, message) of a create the API server
        # rejected as invalid (422): not retried until a spec edit or the next scheduled time.
        self._rejected: dict[str, tuple[str, object, datetime, str]] = {}

    # -- reporting helpers ------------------------------------------------------------------
    def _event(self, obj: Object, kind: str, reason: str, message: str) -> None:
        self.recorder.event(obj, kind, reason, truncate(message))  # type: ignore[arg-type]

    def _report_once(self, key: str, obj: Object, kind: str, reason: str, message: str) -> None:
        message = truncate(message)
        with self._reported_lock:
            if self._reported.get((key, reason)) == message:
                return
            self._reported[(key, reason)] = message
        self.recorder.event(obj, kind, reason, message)  # type: ignore[arg-type]

    def observe_deleted_job(self, obj: Object | DeletedFinalStateUnknown) -> None:
        """Record the scheduled time of a deleted Job controlled by one of our CronJobs.

        Called from the Job informer's delete notification (tombstones unwrapped to their
        last known state) before the owner's key is enqueued, so a run whose Job vanished
        before the status recorded it is never created again.
        """
        job = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(job, Mapping):
            return
        meta = _meta(job)
        ref = controller_of(job)
        if (ref is None or ref.get("kind") != api.KIND
                or str(ref.get("apiVersion", "")).rpartition("/")[0] != api.GROUP):
            return
        owner = str(ref.get("name", ""))
        self.runs.seen(f"{meta.get('namespace')}/{owner}", str(meta.get("name", "")))
        scheduled = jobs.scheduled_time_of(job, owner)
        if scheduled is not None:
            self.runs.observe(f"{meta.get('namespace')}/{owner}", str(ref.get("uid", "")),
                              scheduled)

    def _forget_reports(self, key: str, keep: Sequence[str] = ()) -> None:
        with self._reported_lock:
            for k in [k for k in self._reported if k[0] == key and k[1] not in keep]:
                del self._reported[k]

    # -- the sync ---------------------------------------------------------------------------
    def reconcile(self, key: str) -> Result | None:
        namespace, name = split_meta_namespace_key(key)
        try:
            raw = self.cronjobs.get(namespace, name)
        except NotFound:
            self._forget_reports(key)
            self.runs.forget(key)
            with self._reported_lock:
                self._rejected.pop(key, None)
            return None
        now = self.clock.now()
        meta = _meta(raw)
        uid = str(meta.get("uid", ""))
        status = cast(Mapping[str, Any], raw.get("status") or {})
        owned = [j for j in self.jobs.by_index(CONTROLLER_UID_INDEX, uid)
                 if jobs.is_controlled_by(j, uid)]
        policy = (raw.get("spec") or {}).get("concurrencyPolicy") or "Allow"
        waiting = None if policy == "Allow" else self.runs.unseen(
            key, {str(_meta(j).get("name")) for j in owned})
        if waiting is not None:
            # The Job cache predates our own last create: acting on it, a Forbid could start
            # a second run and a Replace miss the Job it must delete (Allow cannot go wrong:
            # the run record keeps a time from running twice). The Job's ADDED event brings
            # the key back.
            log.debug("waiting for the job cache to show a created job", key=key, job=waiting)
            return Result(requeue_after=CACHE_WAIT_SECONDS)
        plan = self._rebuild_status(key, raw, status, owned)

        errors = api.validate(raw)
        limits_ok = not any(e.field.endswith("HistoryLimit") for e in errors)
        if limits_ok:
            self._cleanup_history(raw, owned, plan)
        if meta.get("deletionTimestamp"):
            return self._finish(raw, status, plan, None)
        # Observed before the validity check: an invalid schedule is a schedule too, so
        # fixing it counts as an edit and never starts a run for a time before the fix.
        edited = self._observe_schedule(raw, status, plan, now)
        if errors:
            return self._invalid(key, raw, status, plan, errors)
        self._forget_reports(key, keep=("MissSchedule", "TooManyMissedTimes", "UnexpectedJob",
                                        "JobAlreadyActive", "SawCompletedJob", "FailedCreate"))
        cronjob = api.CronJob.from_dict(raw)
        zone = api.load_zone(cronjob.spec.time_zone)
        sched = schedule.parse(cronjob.spec.schedule, zone)
        if cronjob.spec.suspend:
            plan.ready = ("True", api.REASON_SUSPENDED, "the CronJob is suspended")
            return self._finish(raw, status, plan, None)
        anchor = self._anchor(cronjob, plan, now, edited)

        due, missed = sched.most_recent(anchor, now)
        deadline = cronjob.spec.starting_deadline_seconds
        if missed > schedule.TOO_MANY_MISSED and deadline is not None:
            # As upstream: with a deadline, only times inside (now - D, now] count as missed;
            # older ones could never start anyway. ``due`` keeps the full window so a run
            # just past its deadline is still reported (MissSchedule).
            _, missed = sched.most_recent(
                max(anchor, schedule.deadline_window_start(now, deadline)), now)
        # Never before the anchor: a time at or before it already ran (or predates the
        # CronJob or the last edit), even when this clock is behind the one that set it.
        plan.next_schedule = sched.next_after(max(now, anchor), anchor=anchor)
        if due is not None:
            self._run(key, raw, cronjob, zone, due, missed, now, plan)
            if plan.created:
                plan.next_schedule = sched.next_after(max(now, due), anchor=due)
        requeue = self._requeue_after(plan.next_schedule)
        return self._finish(raw, status, plan, requeue)

    def _rebuild_status(self, key: str, raw: Object, status: Mapping[str, Any],
                        owned: list[Object]) -> _Plan:
        previously_active = {ref.get("uid") for ref in status.get("active") or []}
        active: list[Object] = []
        meta = _meta(raw)
        name, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
        last_successful = api.parse_time(status.get("lastSuccessfulTime"))
        recorded = api.parse_time(status.get("lastScheduleTime"))
        # A run this process created or saw, whose Job may be gone already, counts until the
        # cached status records it (deferred status write; Job deleted in between).
        last_schedule = _latest(recorded, self.runs.floor(key, uid, recorded))
        newest_job: datetime | None = None
        for job in owned:
            finished, how = jobs.is_job_finished(job)
            newest_job = _latest(newest_job, jobs.scheduled_time_of(job, name))
            if not finished:
                active.append(job)
                continue
            if how == "Complete":
                last_successful = _latest(last_successful, jobs.completion_time_of(job))
            if _meta(job).get("uid") in previously_active:
                # Once per Job: a deferred status write can leave it listed active for one
                # more sync.
                self._report_once(key, raw, "Normal", "SawCompletedJob",
                                  f"Saw completed job: {_meta(job).get('name')}, "
                                  f"condition: {how}")
        if newest_job is not None and (recorded is None or newest_job > recorded):
            self.runs.observe(key, uid, newest_job)
        return _Plan(active=active, last_schedule=_latest(last_schedule, newest_job),
                     last_successful=last_successful)

    def _cleanup_history(self, raw: Object, owned: list[Object], plan: _Plan) -> None:
        spec = cast(Mapping[str, Any], raw.get("spec") or {})
        for how, limit_key in (("Complete", "successfulJobsHistoryLimit"),
                               ("Failed", "failedJobsHistoryLimit")):
            limit = spec.get(limit_key)
            limit = api.DEFAULTS[limit_key] if limit is None else limit
            done = sorted(
                (j for j in owned
                 if jobs.is_job_finished(j) == (True, how)
                 and not _meta(j).get("deletionTimestamp")),
                key=_age_key,
            )
            for job in done[:max(0, len(done) - int(cast(int, limit)))]:
                self._delete_job(raw, job, plan, active=False)

    def _delete_job(self, raw: Object, job: Object, plan: _Plan, *, active: bool) -> None:
        job_meta = _meta(job)
        name = str(job_meta.get("name"))
        try:
            self.client.delete(JOBS, name, str(job_meta.get("namespace")),
                               propagation_policy="Background",
                               preconditions={"uid": str(job_meta.get("uid"))})
        except NotFound:
            # Already gone (TTL controller, a user): nothing was deleted by us.
            if active:
                self._event(raw, "Normal", "MissingJob", f"Active job went missing: {name}")
            log.info("job already gone", job=name, active=active)
        except ApiError as err:
            self._event(raw, "Warning", "FailedDelete",
                        f"Error deleting job {name}: {err.message}")
            raise
        else:
            self._event(raw, "Normal", "SuccessfulDelete", f"Deleted job {name}")
        plan.active = [j for j in plan.active if _meta(j).get("uid") != job_meta.get("uid")]

    def _invalid(self, key: str, raw: Object, status: Mapping[str, Any], plan: _Plan,
                 errors: Sequence[api.FieldError]) -> Result | None:
        reason = api.condition_reason(errors)
        message = truncate("; ".join(str(e) for e in errors))
        plan.ready = ("False", reason, message)
        event_reason = reason if reason in (api.REASON_INVALID_SCHEDULE,
                                            api.REASON_UNKNOWN_TIME_ZONE) else "InvalidSpec"
        self._report_once(key, raw, "Warning", event_reason, message)
        log.info("invalid cronjob", key=key, reason=reason, problem=message)
        return self._finish(raw, status, plan, None)

    def _observe_schedule(self, raw: Object, status: Mapping[str, Any], plan: _Plan,
                          now: datetime) -> datetime | None:
        """Record in ``plan`` which schedule/timeZone is in force and since which edit.

        ``status.observedSchedule`` holds a fixed-size ``digest`` of the pair (never the
        unbounded spec text) and ``since``, set only when a sync saw the pair change. Returns
        that edit time (now, when this sync is the first to see the change), or None when no
        edit is known: a pair seen for the first time (a new or restored CronJob) is not an
        edit, so an unedited schedule anchors on lastScheduleTime.

        The previous version stored ``schedule``/``timeZone`` verbatim and ``since`` =
        creationTimestamp for an unedited pair; that form is still read (``since`` at or
        before creation is no edit), and rewritten in the new form (old keys nulled).
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
            created = api.parse_time(_meta(raw).get("creationTimestamp"))
            if same and since is not None and created is not None and since <= created:
                since = None  # the old form's "since creation": not an edit
            for old_key in ("schedule", "timeZone", "since"):
                if old_key in observed:
                    desired[old_key] = None  # merge patch: remove what is not desired
        if since is not None:
            desired["since"] = api.format_time(since)
        plan.observed_schedule = desired
        return since

    @staticmethod
    def _anchor(cronjob: api.CronJob, plan: _Plan, now: datetime,
                edited: datetime | None) -> datetime:
        """lastScheduleTime, else creation; never before the last schedule/timeZone edit."""
        base = plan.last_schedule or cronjob.creation_timestamp or now
        return max(base, edited) if edited is not None else base

    def _run(self, key: str, raw: Object, cronjob: api.CronJob, zone: tzinfo, due: datetime,
             missed: int, now: datetime, plan: _Plan) -> None:
        if missed > schedule.TOO_MANY_MISSED:
            self._report_once(key, raw, "Warning", "TooManyMissedTimes",
                              f"too many missed start times (> {schedule.TOO_MANY_MISSED}); "
                              f"starting only the most recent, {api.format_time(due)}")
        if not schedule.within_starting_deadline(due, now,
                                                 cronjob.spec.starting_deadline_seconds):
            self._report_once(key, raw, "Warning", "MissSchedule",
                              f"Missed scheduled time to start a job: {api.format_time(due)}")
            return
        name = jobs.job_name(cronjob.name, due)
        try:
            existing: Object | None = self.jobs.get(cronjob.namespace, name)
        except NotFound:
            existing = None
        if existing is not None:
            if not jobs.is_controlled_by(existing, cronjob.uid):
                self._report_unexpected(key, raw, name, due)
            return
        generation = _meta(raw).get("generation")
        with self._reported_lock:
            rejected = self._rejected.get(key)
            if rejected is not None and rejected[:3] != (cronjob.uid, generation, due):
                rejected = None
                del self._rejected[key]
        if rejected is not None:
            # The API server refused this run's Job as invalid; asking again with the same
            # template gets the same answer. Retried after a spec edit or at the next time.
            plan.ready = ("False", REASON_INVALID_JOB_TEMPLATE, rejected[3])
            return
        if plan.active and cronjob.spec.concurrency_policy == "Forbid":
            self._report_once(key, raw, "Normal", "JobAlreadyActive",
                              f"Not starting job for {api.format_time(due)} because a "
                              "prior execution is still running and concurrency policy "
                              "is Forbid")
            return
        if plan.active and cronjob.spec.concurrency_policy == "Replace":
            for job in list(plan.active):
                self._delete_job(raw, job, plan, active=True)
        self._create(key, raw, cronjob, zone, due, plan)

    def _report_unexpected(self, key: str, raw: Object, name: str, due: datetime) -> None:
        self._report_once(key, raw, "Warning", "UnexpectedJob",
                          f"job {name} for the run at {api.format_time(due)} exists but is "
                          "not controlled by this CronJob; leaving it alone")

    def _create(self, key: str, raw: Object, cronjob: api.CronJob, zone: tzinfo,
                due: datetime, plan: _Plan) -> None:
        body = jobs.build_job(raw, due, zone)
        name = str(cast(Mapping[str, Any], body["metadata"])["name"])
        try:
            created = self.client.create(JOBS, body, cronjob.namespace)
        except AlreadyExists:
            try:
                current = self.client.get(JOBS, name, cronjob.namespace)
            except NotFound:
                raise  # deleted between the two calls: retry the sync
            if not jobs.is_controlled_by(current, cronjob.uid):
                self._report_unexpected(key, raw, name, due)
                return
            created = current
        except Invalid as err:
            # A template that got past validation but not the Job's: say so on the CronJob,
            # once, and do not hot-loop (see _run); a raise would requeue with backoff.
            message = truncate(f"Error creating job {name}: {err.message}")
            self._report_once(key, raw, "Warning", "FailedCreate", message)
            plan.ready = ("False", REASON_INVALID_JOB_TEMPLATE, message)
            with self._reported_lock:
                self._rejected[key] = (cronjob.uid, _meta(raw).get("generation"), due, message)
            log.info("job rejected as invalid", key=key, job=name, problem=message)
            return
        except ApiError as err:
            if _namespace_terminating(err):
                # The namespace is being deleted, the CronJob with it: nothing to warn about,
                # and no retry (the next scheduled time or the deletion brings the key back).
                log.info("namespace is terminating; job not created", key=key, job=name)
                return
            self._event(raw, "Warning", "FailedCreate",
                        f"Error creating job {name}: {err.message}")
            raise
        else:
            if self._skew is not None:
                self._skew.observe(max(0.0, (self.clock.now() - due).total_seconds()))
            self._event(raw, "Normal", "SuccessfulCreate", f"Created job {name}")
            log.info("created job", key=key, job=name, scheduled=api.format_time(due))
        self.runs.observe(key, cronjob.uid, due)
        self.runs.created(key, name)
        plan.active.append(created)
        plan.last_schedule = _latest(plan.last_schedule, due)
        plan.created = True

    def _requeue_after(self, next_time: datetime | None) -> float | None:
        if next_time is None:
            return None
        delta = (next_time - self.clock.now()).total_seconds()
        return max(0.0, delta) + REQUEUE_SLACK_SECONDS

    # -- status -----------------------------------------------------------------------------
    def _finish(self, raw: Object, status: Mapping[str, Any], plan: _Plan,
                requeue_after: float | None) -> Result | None:
        result = Result(requeue_after=requeue_after) if requeue_after is not None else None
        if plan.created and self.defer_status_after_create and not _vanishes_fast(raw):
            # Off the critical path: the new Job's informer event brings this key back.
            return result
        desired = self._desired_status(raw, status, plan)
        if _status_equal(status, desired):
            return result
        meta = _meta(raw)
        self.client.patch(
            api.CRONJOBS, str(meta.get("name")), {"status": desired},
            str(meta.get("namespace")), patch_type="merge", subresource="status",
        )
        return result

    def _desired_status(self, raw: Object, status: Mapping[str, Any],
                        plan: _Plan) -> dict[str, Any]:
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
            "observedGeneration": _meta(raw).get("generation"),
            "conditions": [self._ready_condition(status, plan)],
        }
        if plan.observed_schedule is not None:
            desired["observedSchedule"] = plan.observed_schedule
        return desired

    def _ready_condition(self, status: Mapping[str, Any], plan: _Plan) -> dict[str, Any]:
        state, reason, message = plan.ready
        message = truncate(message)
        previous = next((c for c in status.get("conditions") or []
                         if c.get("type") == api.CONDITION_READY), None)
        since = self.clock.now()
        if previous is not None and previous.get("status") == state:
            since = api.parse_time(previous.get("lastTransitionTime")) or since
        return {"type": api.CONDITION_READY, "status": state, "reason": reason,
                "message": message, "lastTransitionTime": api.format_time(since)}


def _fmt(t: datetime | None) -> str | None:
    return api.format_time(t) if t is not None else None


def _status_equal(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    for key, wanted in desired.items():
        have, value = current.get(key), wanted
        if key == "active":
            have = sorted(
                ({k: v for k, v in ref.items() if k != "resourceVersion"} for ref in have or []),
                key=lambda r: str(r.get("name")),
            )
        if key == "conditions":
            have = [{k: c.get(k) for k in ("type", "status", "reason", "message",
                                            "lastTransitionTime")} for c in have or []]
        if key == "observedSchedule" and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if v is not None}  # None = remove
        if have != value and not (have is None and value in (None, [], 0)):
            return False
    return True


def clock_jump_watch(clock: Clock, stop: threading.Event, on_jump: Any,
                     period: float = 1.0, threshold: float = 2.0) -> None:
    """Call ``on_jump()`` when wall time moves against monotonic time by ``threshold`` s.

    Requeues computed from wall time (the next scheduled run) assume the wall clock moves
    like the monotonic one; after a jump (NTP step, VM resume) every CronJob must be
    re-evaluated at once instead of sleeping out a stale delay.
    """
    offset = clock.time() - clock.monotonic()
    while not clock.sleep(period, stop):
        current = clock.time() - clock.monotonic()
        if abs(current - offset) >= threshold:
            log.warning("wall clock jumped; re-evaluating all CronJobs",
                        jump_seconds=round(current - offset, 3))
            on_jump()
        offset = current


