"""The level-triggered CronJob sync (the behaviour contract is CRONJOB.md).

Contract of :meth:`CronJobReconciler.reconcile` (one CronJob :class:`pyctrl.Request`; its
key ``str(request)``, ``namespace/name``, names what the reconciler remembers per CronJob):

1. Read the CronJob and the Jobs it controls (by owner UID, through an index) from the
   informer caches; never LIST. A missing CronJob ends the sync (its Jobs are garbage
   collected by the API server through their controller ownerReference).
2. Rebuild status from the world: ``active`` = our unfinished Jobs not being deleted (no
   ``deletionTimestamp``); ``lastSuccessfulTime`` = the latest completion among our Complete
   Jobs (never going backwards); ``lastScheduleTime`` = the latest of the recorded value, the
   scheduled times of our Jobs (annotation, else the name's minute suffix) and the run record
   (:class:`RunRecord`: runs this process created or saw, deleted Jobs included, that the
   cached status does not show yet), so a status write that was lost or deferred is
   recovered, and a run whose Job vanished is never created again.
3. History cleanup (runs even when suspended), then stop if deleting, invalid or suspended.
4. Find the most recent due time ``t`` (anchor < t <= now), apply the starting deadline, the
   concurrency policy, and create the Job named ``<name>-<unix minutes of t>``. The name is
   deterministic, so a restarted controller or a second replica can never create a run twice;
   AlreadyExists for a Job we control counts as success; a foreign Job holding the name is
   reported (UnexpectedJob) and left alone.
5. Write status once, only when it changed, as a merge patch of the status subresource that
   holds only the changed fields and the cached ``resourceVersion`` (optimistic lock; a 409
   syncs again from the newer copy). A sync that created a Job leaves the write to the sync
   the Job's informer event brings (the critical path at a minute tick is the creates):
   :mod:`~cronjob_controller.statuswrite` states when and how.

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

Parts, each in its own module: :mod:`~cronjob_controller.status` (steps 2 and 5: the status
rebuilt, decided and compared), :mod:`~cronjob_controller.statuswrite` (step 5: the write),
:mod:`~cronjob_controller.missingjobs` (history cleanup, Job deletes, MissingJob),
:mod:`~cronjob_controller.reporting` (events, once per problem),
:mod:`~cronjob_controller.rejections` (refused creates),
:mod:`~cronjob_controller.expectations` (the run record) and
:mod:`~cronjob_controller.clockwatch` (a wall-clock jump re-evaluates every CronJob).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, tzinfo
from typing import Any, Protocol, cast

import structlog
from prometheus_client import CollectorRegistry

from cronjob_controller import api, jobs, schedule
from cronjob_controller.expectations import GoneJobs, RunRecord
from cronjob_controller.metrics import skew_histogram
from cronjob_controller.missingjobs import JobDepartures
from cronjob_controller.rejections import RejectedCreate, RejectedCreates
from cronjob_controller.reporting import MAX_MESSAGE_LENGTH, Reporter, truncate
from cronjob_controller.status import Plan, Readiness, latest, meta, observe_schedule, rebuild
from cronjob_controller.statuswrite import (
    CACHE_WAIT_SECONDS,
    EAGER_STATUS_TTL_SECONDS,
    StatusWriter,
)
from cronjob_controller.templatecheck import REASON_INVALID_JOB_TEMPLATE, TemplateCheck
from pyctrl import Clock, RealClock, Request, Result, controller_of, is_controlled_by
from pyctrl.cache import CONTROLLER_UID_INDEX, DeletedFinalStateUnknown
from pyctrl.errors import AlreadyExists, ApiError, Forbidden, Invalid, NotFound
from pyctrl.kube import JOBS, Client, Object, format_time
from pyctrl.record import EventRecorder

__all__ = [
    "CACHE_WAIT_SECONDS",
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
# A Forbidden create whose cause is this: the namespace is being deleted (NamespaceLifecycle).
_NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"
# Reports kept while a CronJob is valid: each names one run or one Job, not the spec.
_RUN_REPORTS = ("MissSchedule", "TooManyMissedTimes", "UnexpectedJob", "JobAlreadyActive",
                "SawCompletedJob", "FailedCreate", REASON_INVALID_JOB_TEMPLATE)
def _local(t: datetime, zone: tzinfo) -> str:
    """``t`` as RFC 3339 in the CronJob's time zone, for messages (as the ``next`` command
    prints it): ``2026-03-10T08:00:00-04:00`` for America/New_York, ``...Z`` for UTC."""
    return api.format_rfc3339(t.astimezone(zone))


def _namespace_terminating(err: ApiError) -> bool:
    if not isinstance(err, Forbidden):
        return False
    return (any(c.reason == _NAMESPACE_TERMINATING_CAUSE for c in err.causes)
            or "because it is being terminated" in err.message)


class ObjectSource(Protocol):
    """What the reconciler reads from: a Lister (or several merged)."""

    def get(self, namespace: str | None, name: str) -> Object: ...

    def by_index(self, index: str, value: str) -> Sequence[Object]: ...


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
        self._skew = skew_histogram(registry)
        # Each distinct problem reported once instead of on every sync.
        self.reporter = Reporter(recorder)
        # Runs created or seen that the cached status may not record yet (no run twice).
        self.runs = RunRecord()
        # Creates the API server refused as invalid (422): not retried until a spec edit
        # or the next scheduled time.
        self.rejected = RejectedCreates()
        # Jobs whose disappearance is explained: not reported MissingJob.
        self.gone = GoneJobs()
        # The dry run's verdict on each CronJob's template, per spec generation.
        self.templates = TemplateCheck(client, self.clock)
        # History cleanup, Job deletes and the MissingJob check; the status write (step 5).
        self.departures = JobDepartures(client, self.reporter, self.gone)
        self.status_writer = StatusWriter(client, self.clock, self.gone,
                                          defer_after_create=defer_status_after_create)

    @property
    def defer_status_after_create(self) -> bool:
        """Whether a sync that created a Job leaves the status write to the next sync."""
        return self.status_writer.defer_after_create

    def observe_deleted_job(self, obj: Object | DeletedFinalStateUnknown) -> None:
        """Record the scheduled time of a deleted Job controlled by one of our CronJobs.

        Called from the Job informer's delete notification (tombstones unwrapped to their
        last known state) before the owner's key is enqueued, so a run whose Job vanished
        before the status recorded it is never created again.
        """
        job = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(job, Mapping):
            return
        job_meta = meta(job)
        ref = controller_of(job)
        if (ref is None or ref.get("kind") != api.KIND
                or str(ref.get("apiVersion", "")).rpartition("/")[0] != api.GROUP):
            return
        owner_key = f"{job_meta.get('namespace')}/{ref.get('name', '')}"
        self.runs.seen(owner_key, str(job_meta.get("name", "")))
        if jobs.is_job_finished(job)[0]:
            self.gone.note(owner_key, str(job_meta.get("uid", "")))  # cleaned up, not missing
        scheduled = jobs.scheduled_time_of(job, str(ref.get("name", "")))
        if scheduled is not None:
            self.runs.observe(owner_key, str(ref.get("uid", "")), scheduled)

    # -- the sync, top to bottom ------------------------------------------------------------
    def reconcile(self, request: Request) -> Result | None:
        namespace, name, key = request.namespace, request.name, str(request)
        try:
            raw = self.cronjobs.get(namespace, name)
        except NotFound:
            self._forget(key)
            return None
        # 1. What the caches say: the CronJob's status and the Jobs it controls.
        status = cast(Mapping[str, Any], raw.get("status") or {})
        uid = str(meta(raw).get("uid", ""))
        owned = [j for j in self.jobs.by_index(CONTROLLER_UID_INDEX, uid)
                 if is_controlled_by(j, uid)]
        if self._job_cache_behind(key, raw, owned):
            return Result(requeue_after=CACHE_WAIT_SECONDS)
        # 2. Status rebuilt from the world.
        listed = {str(ref.get("uid")) for ref in status.get("active") or []}
        plan = rebuild(key, raw, status, owned, self.runs, self.gone.explained(key, listed))
        self._report_completed(key, raw, plan)
        self.departures.check_unlisted(key, raw, plan)
        # 3. History cleanup (even when suspended); stop if deleting or invalid.
        errors = api.validate(raw)
        if not any(e.field.endswith("HistoryLimit") for e in errors):
            self.departures.cleanup_history(key, raw, owned, plan)
        if meta(raw).get("deletionTimestamp"):
            return self.status_writer.finish(raw, status, plan, None)
        # Observed before the validity check: an invalid schedule is a schedule too, so
        # fixing it counts as an edit and never starts a run for a time before the fix.
        now = self.clock.now()
        plan.observed_schedule, edited = observe_schedule(raw, status, now)
        if errors:
            return self._invalid(key, raw, status, plan, errors)
        self.reporter.forget(key, keep=_RUN_REPORTS)
        if self._template_refused(key, raw, status, plan):
            return self.status_writer.finish(raw, status, plan, None)
        # 4. The run that is due, if any, and the next one.
        return self._schedule(key, raw, status, plan, now, edited)

    def _forget(self, key: str) -> None:
        """The CronJob is gone: drop everything remembered about it."""
        self.reporter.forget(key)
        self.runs.forget(key)
        self.rejected.forget(key)
        self.gone.forget(key)
        self.templates.forget(key)

    def _job_cache_behind(self, key: str, raw: Object, owned: list[Object]) -> bool:
        """Whether the Job cache predates our own last create (Forbid and Replace only).

        Acting on it, a Forbid could start a second run and a Replace miss the Job it must
        delete (Allow cannot go wrong: the run record keeps a time from running twice). The
        Job's ADDED event brings the key back.
        """
        policy = (raw.get("spec") or {}).get("concurrencyPolicy") or "Allow"
        if policy == "Allow":
            return False
        waiting = self.runs.unseen(key, {str(meta(j).get("name")) for j in owned})
        if waiting is None:
            return False
        log.debug("waiting for the job cache to show a created job", key=key, job=waiting)
        return True

    def _report_completed(self, key: str, raw: Object, plan: Plan) -> None:
        for job in plan.completed:
            # Once per Job: a deferred status write can leave it listed active for one
            # more sync.
            self.reporter.once(key, raw, "Normal", "SawCompletedJob",
                               f"Saw completed job: {job.name}, condition: {job.condition}")

    def _template_refused(self, key: str, raw: Object, status: Mapping[str, Any],
                          plan: Plan) -> bool:
        """Whether the API server refuses the Job this spec generation's template makes
        (a dry run, templatecheck.py). Refused: Ready=False InvalidJobTemplate with the
        server's message and one Warning event, at once rather than at the first due time;
        no Job and no requeue until the spec changes."""
        refusal = self.templates.refusal(key, raw, status)
        if refusal is None:
            self.reporter.drop(key, REASON_INVALID_JOB_TEMPLATE)
            return False
        message = truncate(f"the job template makes an invalid Job: {refusal}")
        plan.ready = Readiness("False", REASON_INVALID_JOB_TEMPLATE, message)
        if self.reporter.once(key, raw, "Warning", REASON_INVALID_JOB_TEMPLATE, message):
            log.info("invalid job template", key=key, problem=message)
        return True

    def _schedule(self, key: str, raw: Object, status: Mapping[str, Any], plan: Plan,
                  now: datetime, edited: datetime | None) -> Result | None:
        cronjob = api.CronJob.from_dict(raw)
        zone = api.load_zone(cronjob.spec.time_zone)
        sched = schedule.parse(cronjob.spec.schedule, zone)
        if cronjob.spec.suspend:
            plan.ready = Readiness("True", api.REASON_SUSPENDED, "the CronJob is suspended")
            return self.status_writer.finish(raw, status, plan, None)
        # The anchor: lastScheduleTime, else creation; never before the last edit.
        anchor = plan.last_schedule or cronjob.creation_timestamp or now
        anchor = max(anchor, edited) if edited is not None else anchor
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
        return self.status_writer.finish(raw, status, plan, self._requeue_after(plan.next_schedule))

    def _invalid(self, key: str, raw: Object, status: Mapping[str, Any], plan: Plan,
                 errors: Sequence[api.FieldError]) -> Result | None:
        reason = api.condition_reason(errors)
        message = truncate("; ".join(str(e) for e in errors))
        plan.ready = Readiness("False", reason, message)
        event_reason = reason if reason in (api.REASON_INVALID_SCHEDULE,
                                            api.REASON_UNKNOWN_TIME_ZONE) else "InvalidSpec"
        if self.reporter.once(key, raw, "Warning", event_reason, message):
            # Once per problem, as the event: every later sync (its own status write's
            # update event brings one) finds the same problem.
            log.info("invalid cronjob", key=key, reason=reason, problem=message)
        return self.status_writer.finish(raw, status, plan, None)

    # -- one run ----------------------------------------------------------------------------
    def _run(self, key: str, raw: Object, cronjob: api.CronJob, zone: tzinfo, due: datetime,
             missed: int, now: datetime, plan: Plan) -> None:
        """Start the run at ``due`` unless its deadline, a Job or the policy says not to."""
        if missed > schedule.TOO_MANY_MISSED:
            self.reporter.once(key, raw, "Warning", "TooManyMissedTimes",
                               f"too many missed start times (> {schedule.TOO_MANY_MISSED}); "
                               f"starting only the most recent, {_local(due, zone)}")
        if not schedule.within_starting_deadline(due, now,
                                                 cronjob.spec.starting_deadline_seconds):
            self.reporter.once(key, raw, "Warning", "MissSchedule",
                               f"Missed scheduled time to start a job: {_local(due, zone)}")
            return
        name = jobs.job_name(cronjob.name, due)
        try:
            existing: Object | None = self.jobs.get(cronjob.namespace, name)
        except NotFound:
            existing = None
        if existing is not None:
            if not is_controlled_by(existing, cronjob.uid):
                self._report_unexpected(key, raw, name, _local(due, zone))
            return
        refused = self.rejected.lookup(key, cronjob.uid, meta(raw).get("generation"), due)
        if refused is not None:
            # The API server refused this run's Job as invalid; asking again with the same
            # template gets the same answer. Retried after a spec edit or at the next time.
            plan.ready = Readiness("False", REASON_INVALID_JOB_TEMPLATE, refused)
            return
        if plan.active and cronjob.spec.concurrency_policy == "Forbid":
            self.reporter.once(key, raw, "Normal", "JobAlreadyActive",
                               f"Not starting job for {_local(due, zone)} because a "
                               "prior execution is still running and concurrency policy "
                               "is Forbid")
            return
        if plan.active and cronjob.spec.concurrency_policy == "Replace":
            for job in list(plan.active):
                self.departures.delete(key, raw, job, plan, active=True)
        self._create(key, raw, cronjob, zone, due, plan)

    def _report_unexpected(self, key: str, raw: Object, name: str, due: str) -> None:
        self.reporter.once(key, raw, "Warning", "UnexpectedJob",
                           f"job {name} for the run at {due} exists but is "
                           "not controlled by this CronJob; leaving it alone")

    def _create(self, key: str, raw: Object, cronjob: api.CronJob, zone: tzinfo,
                due: datetime, plan: Plan) -> None:
        body = jobs.build_job(raw, due, zone)
        name = str(cast(Mapping[str, Any], body["metadata"])["name"])
        try:
            created = self.client.create(JOBS, body, cronjob.namespace)
        except AlreadyExists:
            try:
                current = self.client.get(JOBS, name, cronjob.namespace)
            except NotFound:
                raise  # deleted between the two calls: retry the sync
            if not is_controlled_by(current, cronjob.uid):
                self._report_unexpected(key, raw, name, _local(due, zone))
                return
            created = current
        except Invalid as err:
            # A template that got past validation but not the Job's: say so on the CronJob,
            # once, and do not hot-loop (see _run); a raise would requeue with backoff.
            message = truncate(f"Error creating job {name}: {err.message}")
            self.reporter.once(key, raw, "Warning", "FailedCreate", message)
            plan.ready = Readiness("False", REASON_INVALID_JOB_TEMPLATE, message)
            self.rejected.remember(key, RejectedCreate(
                cronjob.uid, meta(raw).get("generation"), due, message))
            log.info("job rejected as invalid", key=key, job=name, problem=message)
            return
        except ApiError as err:
            if _namespace_terminating(err):
                # The namespace is being deleted, the CronJob with it: nothing to warn about,
                # and no retry (the next scheduled time or the deletion brings the key back).
                log.info("namespace is terminating; job not created", key=key, job=name)
                return
            self.reporter.event(raw, "Warning", "FailedCreate",
                                f"Error creating job {name}: {err.message}")
            raise
        else:
            if self._skew is not None:
                self._skew.observe(max(0.0, (self.clock.now() - due).total_seconds()))
            self.reporter.event(raw, "Normal", "SuccessfulCreate", f"Created job {name}")
            log.info("created job", key=key, job=name, scheduled=format_time(due))
        self.runs.observe(key, cronjob.uid, due)
        self.runs.created(key, name)
        plan.active.append(created)
        plan.last_schedule = latest(plan.last_schedule, due)
        plan.created = True

    def _requeue_after(self, next_time: datetime | None) -> float | None:
        if next_time is None:
            return None
        delta = (next_time - self.clock.now()).total_seconds()
        return max(0.0, delta) + REQUEUE_SLACK_SECONDS
