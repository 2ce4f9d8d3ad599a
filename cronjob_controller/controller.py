"""The level-triggered CronJob sync (the behaviour contract is CRONJOB.md).

Contract of :meth:`CronJobReconciler.reconcile` (one CronJob :class:`pyctrl.Request`; its
key ``str(request)``, ``namespace/name``, names what the reconciler remembers per CronJob):

1. Read the CronJob (:class:`cronjob_controller.crd.CronJob`) and the Jobs it controls
   (``pyctrl.models`` Jobs, by owner UID through an index) typed from the caches, through
   :class:`ObjectSource` (a typed lister); never LIST. A missing CronJob ends the sync (the
   API server garbage collects its Jobs); one stored that does not decode
   (:class:`pyctrl.Undecodable`) gets Ready=False and one Warning, and no Job
   (:mod:`~cronjob_controller.undecodable`). The CronJob is validated once per sync.
2. Rebuild status from the world (:func:`~cronjob_controller.status.rebuild`): a status
   write that was lost or deferred is recovered, and a run whose Job vanished is never
   created again (the run record, :class:`RunRecord`).
3. History cleanup (runs even when suspended), then stop if deleting, invalid or suspended.
4. Find the most recent due time ``t`` (anchor < t <= now), apply the starting deadline, the
   concurrency policy, and create the Job named ``<name>-<unix minutes of t>`` (a
   deterministic name: no run twice, whichever replica or restart). AlreadyExists for a Job
   we control counts as success; a foreign Job holding the name is reported (UnexpectedJob)
   and left alone. The created Job joins the plan as its metadata only (the answer's
   spec and status are not decoded: the Job informer delivers the whole Job).
5. Write status once, only when it changed (:mod:`~cronjob_controller.statuswrite`).

Events go through the recorder's background sink and never block a worker; condition and
event messages are cut to MAX_MESSAGE_LENGTH. Invalid specs (bad schedule, unknown zone,
missing template, overlong name) get a Warning event and a ``Ready=False`` condition naming
the problem, once per distinct problem, and no requeue (only a change of the object brings
the key back). Likewise a Job the API server rejects as invalid (422): Ready=False
``InvalidJobTemplate``, FailedCreate once, retried only after a spec edit or at the next
scheduled time. A create refused because the namespace is terminating is only logged. The
next scheduled time (status and requeue) is always after the anchor.

Parts: :mod:`~cronjob_controller.status`, :mod:`~cronjob_controller.statuswrite`,
:mod:`~cronjob_controller.missingjobs`, :mod:`~cronjob_controller.reporting`,
:mod:`~cronjob_controller.rejections`, :mod:`~cronjob_controller.expectations`,
:mod:`~cronjob_controller.templatecheck` and :mod:`~cronjob_controller.clockwatch`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, tzinfo
from typing import Any, Protocol, TypeVar

import structlog
from prometheus_client import CollectorRegistry

from cronjob_controller import api, jobs, schedule
from cronjob_controller.expectations import GoneJobs, RunRecord
from cronjob_controller.metrics import skew_histogram
from cronjob_controller.missingjobs import JobDepartures
from cronjob_controller.rejections import RejectedCreate, RejectedCreates
from cronjob_controller.reporting import MAX_MESSAGE_LENGTH, Reporter, truncate
from cronjob_controller.status import Plan, Readiness, latest, observe_schedule, rebuild
from cronjob_controller.statuswrite import (
    CACHE_WAIT_SECONDS,
    EAGER_STATUS_TTL_SECONDS,
    StatusWriter,
)
from cronjob_controller.templatecheck import REASON_INVALID_JOB_TEMPLATE, TemplateCheck
from cronjob_controller.undecodable import UndecodableCronJobs
from pyctrl import Clock, RealClock, Request, Result, Undecodable, is_controlled_by
from pyctrl import api as typed
from pyctrl.cache import CONTROLLER_UID_INDEX, DeletedFinalStateUnknown
from pyctrl.errors import AlreadyExists, ApiError, Forbidden, Invalid, NotFound
from pyctrl.kube import JOBS, Client, format_time, meta
from pyctrl.models.batch_v1 import Job
from pyctrl.record import EventRecorder

__all__ = ["CACHE_WAIT_SECONDS", "EAGER_STATUS_TTL_SECONDS", "MAX_MESSAGE_LENGTH",
           "REASON_INVALID_JOB_TEMPLATE", "REQUEUE_SLACK_SECONDS", "CronJobReconciler",
           "ObjectSource", "skew_histogram"]

log = structlog.get_logger(__name__)

# Requeue this little after the due time (docs/DESIGN.md, "The CronJob operator: typed, and
# its numbers"); an early wake finds nothing due and requeues for the rest.
REQUEUE_SLACK_SECONDS = 0.005
# A Forbidden create whose cause is this: the namespace is being deleted (NamespaceLifecycle).
_NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"
# Reports kept while a CronJob is valid: each names one run or one Job, not the spec.
_RUN_REPORTS = ("MissSchedule", "TooManyMissedTimes", "UnexpectedJob", "JobAlreadyActive",
                "SawCompletedJob", "FailedCreate", REASON_INVALID_JOB_TEMPLATE)

T_co = TypeVar("T_co", covariant=True)


def _local(t: datetime, zone: tzinfo) -> str:
    """``t`` as RFC 3339 in the CronJob's time zone, for messages (as the ``next`` command
    prints it): ``2026-03-10T08:00:00-04:00`` for America/New_York, ``...Z`` for UTC."""
    return api.format_rfc3339(t.astimezone(zone))


def _namespace_terminating(err: ApiError) -> bool:
    if not isinstance(err, Forbidden):
        return False
    return (any(c.reason == _NAMESPACE_TERMINATING_CAUSE for c in err.causes)
            or "because it is being terminated" in err.message)


class ObjectSource(Protocol[T_co]):
    """What the reconciler reads typed objects from: a typed lister
    (``pyctrl.Lister``, a typed informer's lister)."""

    def get(self, namespace: str | None, name: str) -> T_co: ...

    def by_index(self, index: str, value: str) -> Sequence[T_co]: ...


class CronJobReconciler:
    """Reconciles CronJob keys into Jobs (see module docstring)."""

    def __init__(
        self,
        client: Client,
        cronjobs: ObjectSource[api.CronJob],
        job_source: ObjectSource[Job],
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
        self.undecodable = UndecodableCronJobs(client, self.reporter, self.clock)

    @property
    def defer_status_after_create(self) -> bool:
        """Whether a sync that created a Job leaves the status write to the next sync."""
        return self.status_writer.defer_after_create

    def observe_deleted_job(self, obj: Job | Mapping[str, Any] | DeletedFinalStateUnknown
                            ) -> None:
        """Record the scheduled time of a deleted Job controlled by one of our CronJobs.

        Called from the Job informer's delete notification (a typed Job, a raw one, or a
        tombstone of either) before the owner's key is enqueued, so a run whose Job vanished
        before the status recorded it is never created again.
        """
        job = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if isinstance(job, Mapping):
            try:
                job = typed.decode(Job, job)
            except typed.DecodeError:
                return
        if not isinstance(job, Job):
            return
        ref = meta.controller_ref(job)
        if ref is None or ref.kind != api.KIND or meta.api_group(ref.api_version) != api.GROUP:
            return
        owner_key = f"{job.metadata.namespace}/{ref.name}"
        self.runs.seen(owner_key, job.metadata.name)
        if jobs.is_job_finished(job)[0]:
            self.gone.note(owner_key, job.metadata.uid)  # cleaned up, not missing
        scheduled = jobs.scheduled_time_of(job, ref.name)
        if scheduled is not None:
            self.runs.observe(owner_key, ref.uid, scheduled)

    # -- the sync, top to bottom ------------------------------------------------------------
    def reconcile(self, request: Request) -> Result | None:
        namespace, name, key = request.namespace, request.name, str(request)
        try:
            cronjob = self.cronjobs.get(namespace, name)
        except NotFound:
            self._forget(key)
            return None
        except Undecodable as err:  # stored past a laxer schema: say so, create nothing
            return self.undecodable.report(key, err)
        # 1. What the caches say: the CronJob and the Jobs it controls.
        uid = cronjob.metadata.uid
        owned = [j for j in self.jobs.by_index(CONTROLLER_UID_INDEX, uid)
                 if is_controlled_by(j, uid)]
        if self._job_cache_behind(key, cronjob, owned):
            return Result(requeue_after=CACHE_WAIT_SECONDS)
        # 2. Status rebuilt from the world.
        listed = {ref.uid for ref in cronjob.status.active or ()}
        plan = rebuild(key, cronjob, owned, self.runs, self.gone.explained(key, listed))
        self._report_completed(key, cronjob, plan)
        self.departures.check_unlisted(key, cronjob, plan)
        # 3. History cleanup (even when suspended); stop if deleting or invalid.
        errors = api.validate(cronjob)
        if not any(e.field.endswith("HistoryLimit") for e in errors):
            self.departures.cleanup_history(key, cronjob, owned, plan)
        if cronjob.metadata.deletion_timestamp is not None:
            return self.status_writer.finish(cronjob, plan, None)
        # Observed before the validity check: an invalid schedule is a schedule too, so
        # fixing it counts as an edit and never starts a run for a time before the fix.
        now = self.clock.now()
        plan.observed_schedule, edited = observe_schedule(cronjob, now)
        if errors:
            return self._invalid(key, cronjob, plan, errors)
        self.reporter.forget(key, keep=_RUN_REPORTS)
        if self._template_refused(key, cronjob, plan):
            return self.status_writer.finish(cronjob, plan, None)
        # 4. The run that is due, if any, and the next one.
        return self._schedule(key, cronjob, plan, now, edited)

    def _forget(self, key: str) -> None:
        """The CronJob is gone: drop everything remembered about it."""
        self.reporter.forget(key)
        self.runs.forget(key)
        self.rejected.forget(key)
        self.gone.forget(key)
        self.templates.forget(key)

    def _job_cache_behind(self, key: str, cronjob: api.CronJob, owned: list[Job]) -> bool:
        """Whether the Job cache predates our own last create (Forbid and Replace only).

        Acting on it, a Forbid could start a second run and a Replace miss the Job it must
        delete (Allow cannot go wrong: the run record keeps a time from running twice). The
        Job's ADDED event brings the key back.
        """
        if cronjob.spec.concurrency_policy == "Allow":
            return False
        waiting = self.runs.unseen(key, {j.metadata.name for j in owned})
        if waiting is None:
            return False
        log.debug("waiting for the job cache to show a created job", key=key, job=waiting)
        return True

    def _report_completed(self, key: str, cronjob: api.CronJob, plan: Plan) -> None:
        for job in plan.completed:
            # Once per Job: a deferred status write can leave it listed active for one
            # more sync.
            self.reporter.once(key, cronjob, "Normal", "SawCompletedJob",
                               f"Saw completed job: {job.name}, condition: {job.condition}")

    def _template_refused(self, key: str, cronjob: api.CronJob, plan: Plan) -> bool:
        """Whether the API server refuses the Job this spec generation's template makes
        (a dry run, templatecheck.py). Refused: Ready=False InvalidJobTemplate with the
        server's message and one Warning event, at once rather than at the first due time;
        no Job and no requeue until the spec changes."""
        refusal = self.templates.refusal(key, cronjob)
        if refusal is None:
            self.reporter.drop(key, REASON_INVALID_JOB_TEMPLATE)
            return False
        message = truncate(f"the job template makes an invalid Job: {refusal}")
        plan.ready = Readiness("False", REASON_INVALID_JOB_TEMPLATE, message)
        if self.reporter.once(key, cronjob, "Warning", REASON_INVALID_JOB_TEMPLATE, message):
            log.info("invalid job template", key=key, problem=message)
        return True

    def _schedule(self, key: str, cronjob: api.CronJob, plan: Plan, now: datetime,
                  edited: datetime | None) -> Result | None:
        spec = cronjob.spec
        zone = api.load_zone(spec.time_zone)
        sched = schedule.parse(spec.schedule, zone)
        if spec.suspend:
            plan.ready = Readiness("True", api.REASON_SUSPENDED, "the CronJob is suspended")
            return self.status_writer.finish(cronjob, plan, None)
        # The anchor: lastScheduleTime, else creation; never before the last edit.
        anchor = plan.last_schedule or cronjob.metadata.creation_timestamp or now
        anchor = max(anchor, edited) if edited is not None else anchor
        due, missed = sched.most_recent(anchor, now)
        deadline = spec.starting_deadline_seconds
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
            self._run(key, cronjob, zone, due, missed, now, plan)
            if plan.created:
                plan.next_schedule = sched.next_after(max(now, due), anchor=due)
        return self.status_writer.finish(cronjob, plan,
                                         self._requeue_after(plan.next_schedule))

    def _invalid(self, key: str, cronjob: api.CronJob, plan: Plan,
                 errors: Sequence[api.FieldError]) -> Result | None:
        reason = api.condition_reason(errors)
        message = truncate("; ".join(str(e) for e in errors))
        plan.ready = Readiness("False", reason, message)
        event_reason = reason if reason in (api.REASON_INVALID_SCHEDULE,
                                            api.REASON_UNKNOWN_TIME_ZONE) else "InvalidSpec"
        if self.reporter.once(key, cronjob, "Warning", event_reason, message):
            # Once per problem, as the event: every later sync (its own status write's
            # update event brings one) finds the same problem.
            log.info("invalid cronjob", key=key, reason=reason, problem=message)
        return self.status_writer.finish(cronjob, plan, None)

    # -- one run ----------------------------------------------------------------------------
    def _run(self, key: str, cronjob: api.CronJob, zone: tzinfo, due: datetime, missed: int,
             now: datetime, plan: Plan) -> None:
        """Start the run at ``due`` unless its deadline, a Job or the policy says not to."""
        spec, uid = cronjob.spec, cronjob.metadata.uid
        if missed > schedule.TOO_MANY_MISSED:
            self.reporter.once(key, cronjob, "Warning", "TooManyMissedTimes",
                               f"too many missed start times (> {schedule.TOO_MANY_MISSED}); "
                               f"starting only the most recent, {_local(due, zone)}")
        if not schedule.within_starting_deadline(due, now, spec.starting_deadline_seconds):
            self.reporter.once(key, cronjob, "Warning", "MissSchedule",
                               f"Missed scheduled time to start a job: {_local(due, zone)}")
            return
        name = jobs.job_name(cronjob.metadata.name, due)
        try:
            existing: Job | None = self.jobs.get(cronjob.metadata.namespace, name)
        except NotFound:
            existing = None
        if existing is not None:
            if not is_controlled_by(existing, uid):
                self._report_unexpected(key, cronjob, name, _local(due, zone))
            return
        refused = self.rejected.lookup(key, uid, meta.generation(cronjob), due)
        if refused is not None:
            # The API server refused this run's Job as invalid; asking again with the same
            # template gets the same answer. Retried after a spec edit or at the next time.
            plan.ready = Readiness("False", REASON_INVALID_JOB_TEMPLATE, refused)
            return
        if plan.active and spec.concurrency_policy == "Forbid":
            self.reporter.once(key, cronjob, "Normal", "JobAlreadyActive",
                               f"Not starting job for {_local(due, zone)} because a "
                               "prior execution is still running and concurrency policy "
                               "is Forbid")
            return
        if plan.active and spec.concurrency_policy == "Replace":
            for job in list(plan.active):
                self.departures.delete(key, cronjob, job, plan, active=True)
        self._create(key, cronjob, zone, due, plan)

    def _report_unexpected(self, key: str, cronjob: api.CronJob, name: str, due: str) -> None:
        self.reporter.once(key, cronjob, "Warning", "UnexpectedJob",
                           f"job {name} for the run at {due} exists but is "
                           "not controlled by this CronJob; leaving it alone")

    def _create(self, key: str, cronjob: api.CronJob, zone: tzinfo, due: datetime,
                plan: Plan) -> None:
        body = jobs.build_job(cronjob, due, zone)
        name: str = body["metadata"]["name"]
        namespace, uid = cronjob.metadata.namespace, cronjob.metadata.uid
        try:
            created = self.client.create(JOBS, body, namespace)
        except AlreadyExists:
            try:
                current = self.client.get(JOBS, name, namespace)
            except NotFound:
                raise  # deleted between the two calls: retry the sync
            if not is_controlled_by(current, uid):
                self._report_unexpected(key, cronjob, name, _local(due, zone))
                return
            created = current
        except Invalid as err:
            # A template that got past validation but not the Job's: say so on the CronJob,
            # once, and do not hot-loop (see _run); a raise would requeue with backoff.
            message = truncate(f"Error creating job {name}: {err.message}")
            self.reporter.once(key, cronjob, "Warning", "FailedCreate", message)
            plan.ready = Readiness("False", REASON_INVALID_JOB_TEMPLATE, message)
            self.rejected.remember(key, RejectedCreate(uid, meta.generation(cronjob), due,
                                                       message))
            log.info("job rejected as invalid", key=key, job=name, problem=message)
            return
        except ApiError as err:
            if _namespace_terminating(err):
                # The namespace is being deleted, the CronJob with it: nothing to warn about,
                # and no retry (the next scheduled time or the deletion brings the key back).
                log.info("namespace is terminating; job not created", key=key, job=name)
                return
            self.reporter.event(cronjob, "Warning", "FailedCreate",
                                f"Error creating job {name}: {err.message}")
            raise
        else:
            if self._skew is not None:
                self._skew.observe(max(0.0, (self.clock.now() - due).total_seconds()))
            self.reporter.event(cronjob, "Normal", "SuccessfulCreate", f"Created job {name}")
            log.info("created job", key=key, job=name, scheduled=format_time(due))
        self.runs.observe(key, uid, due)
        self.runs.created(key, name)
        plan.active.append(jobs.created_job(created))
        plan.last_schedule = latest(plan.last_schedule, due)
        plan.created = True

    def _requeue_after(self, next_time: datetime | None) -> float | None:
        if next_time is None:
            return None
        delta = (next_time - self.clock.now()).total_seconds()
        return max(0.0, delta) + REQUEUE_SLACK_SECONDS
