"""Our Jobs that go away: history cleanup and the deletes a sync makes, and MissingJob.

Contract of :class:`JobDepartures` (one per reconciler; ``gone`` is the reconciler's
:class:`~cronjob_controller.expectations.GoneJobs`, ``reporter`` its
:class:`~cronjob_controller.reporting.Reporter`):

* :meth:`JobDepartures.cleanup_history` keeps the newest ``successfulJobsHistoryLimit``
  Complete and ``failedJobsHistoryLimit`` Failed Jobs (the defaults when unset; "newest" by
  :func:`~cronjob_controller.jobs.age_key`) among the owned ones not already being deleted,
  and deletes the older ones (as :meth:`JobDepartures.delete`, not active).
* :meth:`JobDepartures.delete` deletes one of our Jobs (history cleanup, or an active Job a
  Replace run ends) with Background propagation and the Job's UID as precondition. Deleted:
  a Normal ``SuccessfulDelete`` event. Already gone (NotFound: the TTL controller, a user):
  nothing was deleted by us; for an active Job a Normal ``MissingJob`` event, else only a
  log line. Any other API error: a Warning ``FailedDelete`` event, and the error propagates
  (the sync is retried). Unless it propagated, the Job's UID is noted in ``gone`` (a later
  sync does not report it missing) and the Job leaves ``plan.active``.
* :meth:`JobDepartures.check_unlisted` is upstream's MissingJob check, for the
  ``status.active`` entries the Job cache does not hold (``plan.unlisted``) and ``gone`` does
  not explain: each is asked of the API server (the cache may lag it, as upstream does).
  Gone: one Normal ``MissingJob`` event, its UID noted (a deferred status write does not get
  it reported again) and it stays out of ``active``. Found with the same UID, unfinished, not
  being deleted and controlled by the CronJob: the cache is behind, and the Job counts as
  active. Jobs we deleted or saw finish before they vanished are not missing. What is noted
  outlives a stale cached status: ``gone`` forgets only after a successful status write
  (:class:`~cronjob_controller.statuswrite.StatusWriter`).
"""

from __future__ import annotations

import structlog

from cronjob_controller import jobs
from cronjob_controller.crd import CronJob
from cronjob_controller.expectations import GoneJobs
from cronjob_controller.reporting import Reporter
from cronjob_controller.status import Plan
from pyctrl import api, is_controlled_by
from pyctrl.errors import ApiError, NotFound
from pyctrl.kube import JOBS, Client
from pyctrl.models.batch_v1 import Job

__all__ = ["REASON_MISSING_JOB", "JobDepartures"]

log = structlog.get_logger(__name__)

REASON_MISSING_JOB = "MissingJob"


class JobDepartures:
    """Deletes our Jobs and reports the ones that went missing (see module docstring)."""

    def __init__(self, client: Client, reporter: Reporter, gone: GoneJobs) -> None:
        self.client = client
        self.reporter = reporter
        self.gone = gone

    def _missing(self, cronjob: CronJob, name: str) -> None:
        self.reporter.event(cronjob, "Normal", REASON_MISSING_JOB,
                            f"Active job went missing: {name}")

    def cleanup_history(self, key: str, cronjob: CronJob, owned: list[Job], plan: Plan) -> None:
        """Delete the finished Jobs in ``owned`` beyond the CronJob's history limits."""
        spec = cronjob.spec
        for how, limit in (("Complete", spec.successful_jobs_history_limit),
                           ("Failed", spec.failed_jobs_history_limit)):
            done = sorted(
                (j for j in owned
                 if jobs.is_job_finished(j) == (True, how)
                 and j.metadata.deletion_timestamp is None),
                key=jobs.age_key,
            )
            for job in done[:max(0, len(done) - limit)]:
                self.delete(key, cronjob, job, plan, active=False)

    def delete(self, key: str, cronjob: CronJob, job: Job, plan: Plan, *, active: bool) -> None:
        """Delete ``job`` of ``cronjob`` (at ``key``); ``active``: it is a running Job that a
        Replace ends, not finished history."""
        name, uid = job.metadata.name, job.metadata.uid
        if active and job.metadata.deletion_timestamp is not None:
            # Already being deleted (a finalizer holds it; our earlier Replace, its status
            # write deferred): not deleted again, and it leaves active now.
            self.gone.note(key, uid)
            plan.active = [j for j in plan.active if j.metadata.uid != uid]
            return
        try:
            self.client.delete(JOBS, name, job.metadata.namespace,
                               propagation_policy="Background", preconditions={"uid": uid})
        except NotFound:
            # Already gone (TTL controller, a user): nothing was deleted by us.
            if active:
                self._missing(cronjob, name)
            log.info("job already gone", job=name, active=active)
        except ApiError as err:
            self.reporter.event(cronjob, "Warning", "FailedDelete",
                                f"Error deleting job {name}: {err.message}")
            raise
        else:
            self.reporter.event(cronjob, "Normal", "SuccessfulDelete", f"Deleted job {name}")
        self.gone.note(key, uid)  # a later sync: not missing
        plan.active = [j for j in plan.active if j.metadata.uid != uid]

    def check_unlisted(self, key: str, cronjob: CronJob, plan: Plan) -> None:
        """MissingJob for the Jobs ``plan.unlisted`` names that are gone; the found ones
        join ``plan.active``."""
        explained = self.gone.explained(key, {uid for _, uid in plan.unlisted})
        for name, uid in plan.unlisted:
            if uid in explained:
                continue
            try:
                job = api.decode(Job, self.client.get(JOBS, name, cronjob.metadata.namespace))
            except NotFound:
                self._missing(cronjob, name)
                self.gone.note(key, uid)
                log.info("active job went missing", key=key, job=name)
                continue
            if (job.metadata.uid == uid and not jobs.is_job_finished(job)[0]
                    and job.metadata.deletion_timestamp is None
                    and is_controlled_by(job, cronjob.metadata.uid)):
                plan.active.append(job)
