"""Jobs a CronJob creates: deterministic names, the Job built from the template, Job facts.

Contract:

* :func:`job_name` is ``<cronjob-name>-<scheduled time in unix minutes>``: the same run always
  gets the same name, so a restarted or second controller can never create it twice.
* :func:`build_job` returns a fresh batch/v1 Job dict that shares nothing with its input:
  template labels/annotations copied (template name/generateName ignored), the
  ``batch.pyctrl.io/scheduled-timestamp`` annotation (RFC 3339 in the CronJob's zone, set
  last so the template cannot override it), a controller ownerReference
  (``controller``/``blockOwnerDeletion`` true) and a deep copy of the template's Job spec.
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
from typing import Literal, cast

from cronjob_controller.api import (
    API_VERSION,
    KIND,
    SCHEDULED_TIMESTAMP_ANNOTATION,
    format_rfc3339,
    parse_time,
)
from pyctrl import controller_of

__all__ = [
    "JobFinishedType",
    "age_key",
    "build_job",
    "completion_time_of",
    "controller_uid_of",
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


def _mapping(value: object) -> Mapping[str, object]:
    return cast(Mapping[str, object], value) if isinstance(value, Mapping) else {}


def _string_map(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in _mapping(value).items()}


def build_job(
    cronjob: Mapping[str, object], scheduled: datetime, zone: tzinfo
) -> dict[str, object]:
    """The batch/v1 Job for the run of ``cronjob`` (a raw dict) scheduled at ``scheduled``."""
    meta = _mapping(cronjob.get("metadata"))
    template = _mapping(_mapping(cronjob.get("spec")).get("jobTemplate"))
    template_meta = _mapping(template.get("metadata"))
    name = str(meta.get("name", ""))
    annotations = _string_map(template_meta.get("annotations"))
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = format_rfc3339(scheduled.astimezone(zone))
    job_meta: dict[str, object] = {
        "name": job_name(name, scheduled),
        "namespace": str(meta.get("namespace", "")),
        "labels": _string_map(template_meta.get("labels")),
        "annotations": annotations,
        "ownerReferences": [{
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": name,
            "uid": str(meta.get("uid", "")),
            "controller": True,
            "blockOwnerDeletion": True,
        }],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": job_meta,
        "spec": copy.deepcopy(dict(_mapping(template.get("spec")))),
    }


def _conditions(job: Mapping[str, object]) -> list[Mapping[str, object]]:
    conditions = _mapping(job.get("status")).get("conditions")
    if not isinstance(conditions, list):
        return []
    return [c for c in conditions if isinstance(c, Mapping)]


def is_job_finished(job: Mapping[str, object]) -> tuple[bool, JobFinishedType | None]:
    """``(True, "Complete" | "Failed")`` once a terminal condition is True, else (False, None)."""
    for condition in _conditions(job):
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Complete":
            return True, "Complete"
        if condition.get("type") == "Failed":
            return True, "Failed"
    return False, None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def age_key(job: Mapping[str, object]) -> tuple[datetime, datetime]:
    """Sort key, oldest first: start time (1 s resolution), ties broken by scheduled time."""
    created = parse_time(_mapping(job.get("metadata")).get("creationTimestamp")) or _EPOCH
    started = parse_time(_mapping(job.get("status")).get("startTime")) or created
    return started, scheduled_time_of(job) or created


def completion_time_of(job: Mapping[str, object]) -> datetime | None:
    """``status.completionTime`` (set on Complete Jobs), as aware UTC."""
    return parse_time(_mapping(job.get("status")).get("completionTime"))


def scheduled_time_of(job: Mapping[str, object],
                      cronjob_name: str | None = None) -> datetime | None:
    """The scheduled time recorded in the annotation, as aware UTC.

    Without a usable annotation: the time encoded in the name ``<cronjob_name>-<minutes>``
    when ``cronjob_name`` is given (a Job we control), else None.
    """
    meta = _mapping(job.get("metadata"))
    parsed = parse_time(_mapping(meta.get("annotations")).get(SCHEDULED_TIMESTAMP_ANNOTATION))
    if parsed is not None:
        return parsed.astimezone(UTC)
    if cronjob_name is None:
        return None
    return time_from_name(str(meta.get("name") or ""), cronjob_name)


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


def controller_uid_of(obj: Mapping[str, object]) -> str | None:
    """The UID in the first ownerReference with ``controller: true`` (metav1.GetControllerOf)."""
    ref = controller_of(obj)
    uid = ref.get("uid") if ref is not None else None
    return uid if isinstance(uid, str) else None
