"""The batch.pyctrl.io/v1 CronJob types: API constants, time formats and a typed view.

Contract:

* :meth:`CronJob.from_dict` builds an immutable typed view of a raw object with defaults
  applied. It is tolerant of invalid *values* (a bad schedule stays a string, for the controller
  to report) and raises :class:`InvalidCronJobError` only for wrong *types*, which the CRD's
  structural schema already rejects. It never mutates its input.
* Times are aware UTC ``datetime``; ``pyctrl.kube.format_time`` writes metav1.Time (RFC 3339,
  seconds, ``Z``) and :func:`format_rfc3339` writes Go's ``time.RFC3339`` in any zone.
* :func:`condition_reason` names the Ready=False reason for a list of field errors.

Users import these names from :mod:`cronjob_controller.api`, which re-exports them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Literal, cast

from cronjob_controller.defaults import DEFAULTS
from cronjob_controller.validation import (
    ConcurrencyPolicy,
    FieldError,
    InvalidCronJobError,
    type_errors,
)
from pyctrl import kube
from pyctrl.kube import Resource

__all__ = [
    "API_VERSION", "CONDITION_READY", "CRONJOBS", "GROUP", "KIND", "REASON_INVALID_SCHEDULE",
    "REASON_INVALID_SPEC", "REASON_SCHEDULED", "REASON_SUSPENDED", "REASON_UNKNOWN_TIME_ZONE",
    "SCHEDULED_TIMESTAMP_ANNOTATION", "VERSION", "Condition", "CronJob", "CronJobSpec",
    "CronJobStatus", "JobTemplate", "ObjectReference", "condition_reason", "format_rfc3339",
    "parse_time",
]

GROUP = "batch.pyctrl.io"
VERSION = "v1"
KIND = "CronJob"
API_VERSION = f"{GROUP}/{VERSION}"
CRONJOBS = Resource(GROUP, VERSION, "cronjobs", KIND)
SCHEDULED_TIMESTAMP_ANNOTATION = "batch.pyctrl.io/scheduled-timestamp"

# status.conditions: one "Ready" condition. True: the spec is valid and the controller
# schedules it (reason Scheduled, or Suspended); False: the reason names the problem.
CONDITION_READY = "Ready"
REASON_SCHEDULED = "Scheduled"
REASON_SUSPENDED = "Suspended"
REASON_INVALID_SCHEDULE = "InvalidSchedule"  # also the Warning event reason
REASON_UNKNOWN_TIME_ZONE = "UnknownTimeZone"  # also the Warning event reason
REASON_INVALID_SPEC = "InvalidSpec"


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 string as an aware UTC datetime; None for None or anything unparsable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo is not None else None


def format_rfc3339(t: datetime) -> str:
    """Go's ``time.RFC3339`` in ``t``'s own zone: seconds precision, ``Z`` for offset 0."""
    offset = t.utcoffset()
    if offset is None:
        raise ValueError(f"naive datetime {t!r}")
    text = t.replace(microsecond=0, tzinfo=None).isoformat()
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def condition_reason(errors: Sequence[FieldError]) -> str:
    """The Ready=False reason (and Warning event reason) for a non-empty error list."""
    fields = {e.field for e in errors}
    if "spec.schedule" in fields:
        return REASON_INVALID_SCHEDULE
    if "spec.timeZone" in fields:
        return REASON_UNKNOWN_TIME_ZONE
    return REASON_INVALID_SPEC


@dataclass(frozen=True, slots=True)
class ObjectReference:
    """An entry of ``status.active``."""

    name: str
    namespace: str
    uid: str
    api_version: str = "batch/v1"
    kind: str = "Job"
    resource_version: str = ""

    @classmethod
    def from_dict(cls, ref: Mapping[str, object]) -> ObjectReference:
        return cls(name=str(ref.get("name", "")), namespace=str(ref.get("namespace", "")),
                   uid=str(ref.get("uid", "")), api_version=str(ref.get("apiVersion", "")),
                   kind=str(ref.get("kind", "")),
                   resource_version=str(ref.get("resourceVersion", "")))

    @classmethod
    def for_job(cls, job: Mapping[str, object]) -> ObjectReference:
        """A reference to a batch/v1 Job object."""
        meta = cast(Mapping[str, object], job.get("metadata") or {})
        return cls(name=str(meta.get("name", "")), namespace=str(meta.get("namespace", "")),
                   uid=str(meta.get("uid", "")),
                   resource_version=str(meta.get("resourceVersion", "")))

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"apiVersion": self.api_version, "kind": self.kind,
                                  "name": self.name, "namespace": self.namespace,
                                  "uid": self.uid}
        if self.resource_version:
            out["resourceVersion"] = self.resource_version
        return out


@dataclass(frozen=True, slots=True)
class Condition:
    """A metav1.Condition."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str
    last_transition_time: datetime
    observed_generation: int | None = None

    @classmethod
    def from_dict(cls, c: Mapping[str, object]) -> Condition:
        raw_status = c.get("status")
        status: Literal["True", "False", "Unknown"] = (
            "True" if raw_status == "True" else "False" if raw_status == "False" else "Unknown")
        generation = c.get("observedGeneration")
        return cls(
            type=str(c.get("type", "")), status=status,
            reason=str(c.get("reason", "")), message=str(c.get("message", "")),
            last_transition_time=parse_time(c.get("lastTransitionTime"))
            or datetime.fromtimestamp(0, UTC),
            observed_generation=generation if isinstance(generation, int) else None,
        )

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "type": self.type, "status": self.status, "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": kube.format_time(self.last_transition_time),
        }
        if self.observed_generation is not None:
            out["observedGeneration"] = self.observed_generation
        return out


@dataclass(frozen=True, slots=True)
class JobTemplate:
    """``spec.jobTemplate``: labels and annotations to copy, and the raw Job spec."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    spec: Mapping[str, object]  # the caller's dict, read-only by convention: deep-copy to use


@dataclass(frozen=True, slots=True)
class CronJobSpec:
    schedule: str
    job_template: JobTemplate
    time_zone: str | None = None
    starting_deadline_seconds: int | None = None
    concurrency_policy: ConcurrencyPolicy = "Allow"
    suspend: bool = False
    successful_jobs_history_limit: int = 3
    failed_jobs_history_limit: int = 1


@dataclass(frozen=True, slots=True)
class CronJobStatus:
    active: tuple[ObjectReference, ...] = ()
    last_schedule_time: datetime | None = None
    last_successful_time: datetime | None = None
    next_schedule_time: datetime | None = None
    observed_generation: int | None = None
    conditions: tuple[Condition, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """The status subresource body; ``activeCount`` backs the ACTIVE printer column."""
        out: dict[str, object] = {
            "active": [ref.to_dict() for ref in self.active],
            "activeCount": len(self.active),
        }
        for key, t in (("lastScheduleTime", self.last_schedule_time),
                       ("lastSuccessfulTime", self.last_successful_time),
                       ("nextScheduleTime", self.next_schedule_time)):
            if t is not None:
                out[key] = kube.format_time(t)
        if self.observed_generation is not None:
            out["observedGeneration"] = self.observed_generation
        if self.conditions:
            out["conditions"] = [c.to_dict() for c in self.conditions]
        return out


@dataclass(frozen=True, slots=True)
class CronJob:
    """An immutable typed view of a CronJob object, with defaults applied."""

    name: str
    namespace: str
    uid: str
    spec: CronJobSpec
    status: CronJobStatus = field(default_factory=CronJobStatus)
    generation: int = 0
    resource_version: str = ""
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None

    @classmethod
    def from_dict(cls, obj: Mapping[str, object]) -> CronJob:
        """Parse ``obj``; raises InvalidCronJobError if a field has the wrong type."""
        wrong_types = type_errors(obj)
        if wrong_types:
            raise InvalidCronJobError(wrong_types)
        meta = cast(Mapping[str, object], obj.get("metadata") or {})
        spec = cast(Mapping[str, object], obj["spec"])
        template = cast(Mapping[str, object], spec["jobTemplate"])
        template_meta = cast(Mapping[str, object], template.get("metadata") or {})
        raw_status = obj.get("status")
        status = raw_status if isinstance(raw_status, Mapping) else {}
        generation = meta.get("generation")
        return cls(
            name=str(meta.get("name", "")), namespace=str(meta.get("namespace", "")),
            uid=str(meta.get("uid", "")),
            generation=generation if isinstance(generation, int) else 0,
            resource_version=str(meta.get("resourceVersion", "")),
            creation_timestamp=parse_time(meta.get("creationTimestamp")),
            deletion_timestamp=parse_time(meta.get("deletionTimestamp")),
            spec=CronJobSpec(
                schedule=cast(str, spec["schedule"]),
                time_zone=cast("str | None", spec.get("timeZone")),
                starting_deadline_seconds=cast("int | None", spec.get("startingDeadlineSeconds")),
                concurrency_policy=cast(ConcurrencyPolicy, _get(spec, "concurrencyPolicy")),
                suspend=cast(bool, _get(spec, "suspend")),
                successful_jobs_history_limit=cast(int, _get(spec, "successfulJobsHistoryLimit")),
                failed_jobs_history_limit=cast(int, _get(spec, "failedJobsHistoryLimit")),
                job_template=JobTemplate(
                    labels=MappingProxyType(dict(
                        cast(Mapping[str, str], template_meta.get("labels") or {}))),
                    annotations=MappingProxyType(dict(
                        cast(Mapping[str, str], template_meta.get("annotations") or {}))),
                    spec=cast(Mapping[str, object], template["spec"]),
                ),
            ),
            status=_parse_status(status),
        )


def _get(spec: Mapping[str, object], key: str) -> object:
    value = spec.get(key)
    return DEFAULTS[key] if value is None else value


def _parse_status(status: Mapping[str, object]) -> CronJobStatus:
    active = status.get("active")
    conditions = status.get("conditions")
    generation = status.get("observedGeneration")
    return CronJobStatus(
        active=tuple(ObjectReference.from_dict(r) for r in active if isinstance(r, Mapping))
        if isinstance(active, list) else (),
        last_schedule_time=parse_time(status.get("lastScheduleTime")),
        last_successful_time=parse_time(status.get("lastSuccessfulTime")),
        next_schedule_time=parse_time(status.get("nextScheduleTime")),
        observed_generation=generation if isinstance(generation, int) else None,
        conditions=tuple(Condition.from_dict(c) for c in conditions if isinstance(c, Mapping))
        if isinstance(conditions, list) else (),
    )
