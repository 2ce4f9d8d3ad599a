"""Jobs a CronJob creates: deterministic names, the Job built from the template, Job facts.

Contract:

* :func:`job_name` is ``<cronjob-name>-<scheduled time in unix minutes>``: the same run always
  gets the same name, so a restarted or second controller can never create it twice.
* Jobs are read as the generated ``pyctrl.models.Job``; the one a sync creates is written as
  a dict, since the template is passed through verbatim (crd.py).
* :func:`build_job` returns a fresh batch/v1 Job dict that shares nothing with its input:
  template labels/annotations copied (template name/generateName ignored), the
  ``batch.pyctrl.io/scheduled-timestamp`` annotation (RFC 3339 in the CronJob's zone, set
  last so the template cannot override it), a controller ownerReference
  (``controller``/``blockOwnerDeletion`` true) and a deep copy of the template's Job spec
  (a JSON round trip; a value JSON cannot carry, such as an int past 64 bits, falls back
  to ``copy.deepcopy``: the same copy either way).
* :func:`created_job` is the Job a create's answer names, its metadata decoded and its spec
  and status left empty (a sync reads only the metadata; the informer delivers the whole Job).
* :func:`is_job_finished` follows upstream: a Job is finished only when its ``Complete`` or
  ``Failed`` condition is True. ``SuccessCriteriaMet`` / ``FailureTarget`` (batch/v1 since
  1.31) only announce that outcome while pods are still terminating, so such a Job is still
  active (it still counts for Forbid/Replace) until the terminal condition arrives.
* Ownership is by UID only (``pyctrl.is_controlled_by`` given the
  CronJob's uid): a Job of a deleted-and-recreated CronJob of the same name is not ours.
* :func:`age_key` orders finished Jobs for history cleanup: oldest start time first.
* :func:`scheduled_time_of` reads the scheduled-timestamp annotation; given the CronJob's
  name it falls back to the ``<name>-<unix minutes>`` suffix (upstream's
  getTimeHashInMinutes), so a Job created by an older version or by hand with our name still
  counts. Callers pass the name only for Jobs they control.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo
from typing import Any, Literal

import orjson

from cronjob_controller.constants import (
    API_VERSION,
    KIND,
    SCHEDULED_TIMESTAMP_ANNOTATION,
    format_rfc3339,
)
from cronjob_controller.crd import CronJob
from pyctrl import api
from pyctrl.api import ObjectMeta
from pyctrl.kube import meta
from pyctrl.models.batch_v1 import Job

__all__ = [
    "JobFinishedType",
    "age_key",
    "build_job",
    "completion_time_of",
    "created_job",
    "is_job_finished",
    "job_name",
    "scheduled_time_of",
    "time_from_name",
]

JobFinishedType = Literal["Complete", "Failed"]


def job_name(cronjob_name: str, scheduled: datetime) -> str:
    """``<name>-<unix minutes of scheduled>``, e.g. ``hello-28459140``."""
    if scheduled.utcoffset() is None:
        raise ValueError(f"naive datetime {scheduled!r}")
    return f"{cronjob_name}-{int(scheduled.timestamp()) // 60}"


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _string_map(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in _mapping(value).items()}


def _json_copy(value: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of the JSON object ``value``: an orjson round trip (several times quicker
    than ``copy.deepcopy``), else ``copy.deepcopy`` for what JSON cannot carry."""
    try:
        copied: dict[str, Any] = orjson.loads(orjson.dumps(value))
    except orjson.JSONEncodeError:
        return copy.deepcopy(dict(value))
    return copied


def build_job(cronjob: CronJob, scheduled: datetime, zone: tzinfo) -> dict[str, Any]:
    """The batch/v1 Job (a dict: the template passes through verbatim) for the run of
    ``cronjob`` scheduled at ``scheduled``."""
    template = cronjob.spec.job_template
    template_meta = _mapping(template.get("metadata"))
    name = cronjob.metadata.name
    annotations = _string_map(template_meta.get("annotations"))
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = format_rfc3339(scheduled.astimezone(zone))
    job_meta: dict[str, Any] = {
        "name": job_name(name, scheduled),
        "namespace": cronjob.metadata.namespace,
        "labels": _string_map(template_meta.get("labels")),
        "annotations": annotations,
        "ownerReferences": [{
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": name,
            "uid": cronjob.metadata.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": job_meta,
        "spec": _json_copy(_mapping(template.get("spec"))),
    }


def created_job(answer: Mapping[str, Any]) -> Job:
    """The Job the server answered a create with, metadata only (see module docstring)."""
    return Job(api_version="batch/v1", kind="Job",
               metadata=api.decode(ObjectMeta, _mapping(answer.get("metadata"))))


def is_job_finished(job: Job) -> tuple[bool, JobFinishedType | None]:
    """``(True, "Complete" | "Failed")`` once a terminal condition is True, else (False, None)."""
    for condition in job.status.conditions:
        if condition.status != "True":
            continue
        if condition.type == "Complete":
            return True, "Complete"
        if condition.type == "Failed":
            return True, "Failed"
    return False, None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def age_key(job: Job) -> tuple[datetime, datetime]:
    """Sort key, oldest first: start time (1 s resolution), ties broken by scheduled time."""
    created = job.metadata.creation_timestamp or _EPOCH
    started = job.status.start_time or created
    return started, scheduled_time_of(job) or created


def completion_time_of(job: Job) -> datetime | None:
    """``status.completionTime`` (set on Complete Jobs)."""
    return job.status.completion_time


def scheduled_time_of(job: Job, cronjob_name: str | None = None) -> datetime | None:
    """The scheduled time recorded in the annotation, as aware UTC.

    Without a usable annotation: the time encoded in the name ``<cronjob_name>-<minutes>``
    when ``cronjob_name`` is given (a Job we control), else None.
    """
    parsed = meta.parse_micro_time(meta.annotations(job).get(SCHEDULED_TIMESTAMP_ANNOTATION))
    if parsed is not None:
        return parsed.astimezone(UTC)
    if cronjob_name is None:
        return None
    return time_from_name(meta.name(job), cronjob_name)


# Unix minutes of the year 9999 (datetime's range) have 10 digits; longer is not a time.
_MAX_MINUTE_DIGITS = 10


def time_from_name(job_name_: str, cronjob_name: str) -> datetime | None:
    """The scheduled time encoded in ``<cronjob_name>-<unix minutes>``, else None."""
    prefix = f"{cronjob_name}-"
    suffix = job_name_[len(prefix):] if job_name_.startswith(prefix) else ""
    if not suffix.isascii() or not suffix.isdigit() or len(suffix) > _MAX_MINUTE_DIGITS:
        return None
    try:
        return datetime.fromtimestamp(int(suffix) * 60, UTC)
    except (ValueError, OverflowError, OSError):
        return None
