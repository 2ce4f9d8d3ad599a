"""Step 5 of the CronJob sync (controller.py): the one status write, or why there is none.

Contract of :meth:`StatusWriter.finish` (the last call of every sync that found its CronJob;
it returns the sync's :class:`pyctrl.Result`, ``requeue_after`` as given or None):

* Deferred: a sync that created a Job (``plan.created``) returns without writing when
  ``defer_after_create`` is on (the default), unless the template's
  ``ttlSecondsAfterFinished`` is at most EAGER_STATUS_TTL_SECONDS (such a Job may be gone
  before a deferred write; CRONJOB.md, "No run twice"). The Job's ADDED event enqueues the
  CronJob again, and that sync rebuilds and writes the status
  (:func:`~cronjob_controller.status.rebuild` recovers ``lastScheduleTime`` from the Job, or
  from the run record if the Job is already gone). Why: docs/DESIGN.md.
* Only when changed: the body is :func:`~cronjob_controller.status.status_changes` of the
  cached and the desired (typed) status; empty, nothing is sent.
* Otherwise one merge patch of the status subresource holding only the changed fields and
  the cached ``resourceVersion`` (optimistic lock: a status someone else wrote since the
  cache saw it is never overwritten from the stale copy, as upstream's UpdateStatus), asking
  for the answer's metadata only (``answer="metadata"``: nothing reads the rest). A 409
  is logged and answered with a requeue after ``min(requeue_after, CACHE_WAIT_SECONDS)`` (a
  backstop: the newer CronJob's informer event usually brings the key back sooner). Any
  other error propagates (the sync is retried with backoff).
* A write that succeeded settles :class:`~cronjob_controller.expectations.GoneJobs`: the
  cached status was the latest, so the gone Jobs it does not list active are listed by no
  status this process will read from now on.
"""

from __future__ import annotations

from typing import Any

import structlog

from cronjob_controller.crd import CRONJOBS, CronJob
from cronjob_controller.expectations import GoneJobs
from cronjob_controller.status import Plan, desired_status, status_changes
from pyctrl import Clock, Result
from pyctrl.errors import Conflict
from pyctrl.kube import Client

__all__ = ["CACHE_WAIT_SECONDS", "EAGER_STATUS_TTL_SECONDS", "StatusWriter", "vanishes_fast"]

log = structlog.get_logger(__name__)

# A sync that finds a cache behind what it knows (here: a 409 on the status write; in
# controller.py: a Job cache that does not show our own last create yet) syncs again after
# this. The informer event that brings the newer copy usually brings the key back sooner.
CACHE_WAIT_SECONDS = 1.0
# Jobs whose template deletes them this soon after they finish get the status write in the
# same sync as their create (module docstring).
EAGER_STATUS_TTL_SECONDS = 60


def vanishes_fast(cronjob: CronJob) -> bool:
    """Whether the CronJob's Jobs delete themselves within EAGER_STATUS_TTL_SECONDS of
    finishing (``spec.jobTemplate.spec.ttlSecondsAfterFinished``)."""
    job_spec = cronjob.spec.job_template.get("spec")
    ttl = job_spec.get("ttlSecondsAfterFinished") if isinstance(job_spec, dict) else None
    return (isinstance(ttl, int) and not isinstance(ttl, bool)
            and ttl <= EAGER_STATUS_TTL_SECONDS)


class StatusWriter:
    """Writes a CronJob's status at the end of a sync (see module docstring)."""

    def __init__(self, client: Client, clock: Clock, gone: GoneJobs, *,
                 defer_after_create: bool = True) -> None:
        self.client = client
        self.clock = clock
        self.gone = gone
        self.defer_after_create = defer_after_create

    def finish(self, cronjob: CronJob, plan: Plan,
               requeue_after: float | None) -> Result | None:
        """Write what ``plan`` changed in the cached status of ``cronjob``, if anything; the
        sync's result."""
        result = Result(requeue_after=requeue_after) if requeue_after is not None else None
        if plan.created and self.defer_after_create and not vanishes_fast(cronjob):
            # Off the critical path: the new Job's informer event brings this key back.
            return result
        changed = status_changes(cronjob.status, desired_status(cronjob, plan, self.clock))
        if not changed:
            return result
        body: dict[str, Any] = {"status": changed}
        md = cronjob.metadata
        if md.resource_version:
            # Optimistic lock: a status someone else wrote since the cache saw it is never
            # overwritten from the stale copy (upstream's UpdateStatus gets the same 409).
            body["metadata"] = {"resourceVersion": md.resource_version}
        try:
            self.client.patch(CRONJOBS, md.name, body, md.namespace, patch_type="merge",
                              subresource="status", answer="metadata")
        except Conflict:
            # The newer CronJob's informer event brings the key back once the cache has it;
            # the requeue is only a backstop, and a delay, so a lagging cache is no hot loop.
            log.info("status changed since the cache saw it; syncing again from the newer "
                     "copy", key=f"{md.namespace}/{md.name}",
                     resource_version=md.resource_version)
            wait = CACHE_WAIT_SECONDS if requeue_after is None else min(requeue_after,
                                                                         CACHE_WAIT_SECONDS)
            return Result(requeue_after=wait)
        # The cached status was the latest: the gone Jobs it does not list are listed by no
        # status this process will read from now on.
        self.gone.settle(f"{md.namespace}/{md.name}",
                         {ref.uid for ref in cronjob.status.active or ()})
        return result
