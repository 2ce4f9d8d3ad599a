"""Manual runs: a Job made from a CronJob's template now (``python -m cronjob_controller trigger``).

Contract: :func:`manual_job` builds the Job of a manual run of a typed CronJob:
the template's Job named ``<cronjob>-manual-<5 hex digits>``, controlled by the CronJob, with
the annotation ``cronjob.kubernetes.io/instantiate: manual`` and without the
scheduled-timestamp annotation (it never moves ``lastScheduleTime``, so it can not suppress
a scheduled run that is due). :func:`run_now` creates it and, when the controller shards
the CronJob (``--sharding``: it carries the shard label), lists the Job on the CronJob's
handover annotation (:func:`pyctrl.sharding.add_to_handover`), so whichever shard
owns the CronJob, also one it is moving to, adopts the Job (relabels it for itself and waits
until its cache holds it) before it syncs the CronJob again: a Forbid or Replace policy
sees the manual run at once, not only after the sharder's sweep. The Job is created without
a shard label (this process is no shard, and the CronJob may be moving right now: a Job
labelled for its old shard would be listed by nobody); if this process dies before the
listing, the sharder's sweep still finds the unlabelled Job within its resync (30 s).
Without the shard label nothing but the create is written, as before sharding.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from cronjob_controller import api, jobs
from cronjob_controller.wiring import CONTROLLER_NAME
from pyctrl import api as typed
from pyctrl.errors import ApiError
from pyctrl.kube import JOBS, Client, RawObject, meta
from pyctrl.sharding import add_to_handover

__all__ = ["ManualRun", "manual_job", "run_now"]

INSTANTIATE_ANNOTATION = "cronjob.kubernetes.io/instantiate"


@dataclass(frozen=True)
class ManualRun:
    """What :func:`run_now` did: the Job it created and how its handover went.

    ``handover``: ``listed`` (on the CronJob's handover list), ``unsharded`` (the CronJob
    carries no shard label: nothing to list), ``gone`` (the CronJob was deleted after the
    create; its Job is garbage collected with it), ``failed`` (the listing failed: ``error``
    says why; the sharder's sweep hands the Job over within its resync).
    """

    job: str
    handover: Literal["listed", "unsharded", "gone", "failed"]
    error: str = ""


def manual_job(cronjob: api.CronJob, now: datetime) -> dict[str, Any]:
    """The Job of a manual run of ``cronjob`` started at ``now`` (see module docstring)."""
    body = jobs.build_job(cronjob, now, api.load_zone(cronjob.spec.time_zone))
    job_meta: dict[str, Any] = body["metadata"]
    # A manual run must never collide with (or be mistaken for) a scheduled one.
    job_meta["name"] = f"{cronjob.metadata.name}-manual-{uuid.uuid4().hex[:5]}"
    annotations: dict[str, str] = job_meta["annotations"]
    annotations.pop(api.SCHEDULED_TIMESTAMP_ANNOTATION, None)
    annotations[INSTANTIATE_ANNOTATION] = "manual"
    return body


def run_now(client: Client, cronjob: RawObject, now: datetime) -> ManualRun:
    """Create the manual run's Job of ``cronjob`` (a raw object, as read just before) and
    hand it to the CronJob's shard (see module docstring). The create's ApiError is raised; a
    failed listing is reported in the result (the Job exists)."""
    namespace = meta.namespace(cronjob) or None
    created = client.create(JOBS, manual_job(typed.decode(api.CronJob, cronjob), now),
                            namespace)
    name = meta.name(created)
    try:
        outcome = add_to_handover(client, api.CRONJOBS, cronjob, [(JOBS, name)],
                                  controller=CONTROLLER_NAME)
    except ApiError as err:  # a Conflict after every try, or e.g. no RBAC to patch CronJobs
        return ManualRun(name, "failed", str(err))
    return ManualRun(name, outcome)
