"""CronJob validation: the bounds, field errors and time zones the webhook and controller share.

Contract:

* :func:`validate` is the one validation shared by the admission webhook and the controller
  (a webhook may not be installed). It never raises; it returns :class:`FieldError` s whose
  ``str()`` reads like the apiserver's (``spec.schedule: Invalid value: "61 * * * *": ...``).
  Every user-controlled string and integer has a bound stated once here (``MAX_*``) and
  mirrored in the CRD schema (a unit test keeps the two equal). Lengths are checked before
  any parsing, and parsing is linear, so one admission review costs O(limit) at most.
* :func:`type_errors` is the part of :func:`validate` that makes an object unreadable (missing
  or wrongly typed fields), for :meth:`cronjob_controller.api.CronJob.from_dict`.
* Time zones are the canonical names of the ``tzdata`` package we ship (its ``zones`` list),
  loaded from that package, never the host's ``/usr/share/zoneinfo``: the webhook and the
  controller agree whatever image they run in, and ``localtime``, ``posixrules``,
  ``Factory``, ``posix/...``, ``right/...`` and ``Local`` are refused (:func:`load_zone`).

Users import these names from :mod:`cronjob_controller.api`, which re-exports them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, tzinfo
from enum import StrEnum
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Literal, cast
from zoneinfo import ZoneInfo

from cronjob_controller.schedule import ScheduleError, check

__all__ = [
    "CONCURRENCY_POLICIES", "MAX_HISTORY_LIMIT", "MAX_NAME_LENGTH", "MAX_SCHEDULE_LENGTH",
    "MAX_STARTING_DEADLINE_SECONDS", "MAX_TIME_ZONE_LENGTH", "ConcurrencyPolicy", "ErrorType",
    "FieldError", "InvalidCronJobError", "UnknownTimeZoneError", "load_zone", "type_errors",
    "validate",
]

MAX_NAME_LENGTH = 52  # 63 (DNS label) - 11: Job names append "-<unix minutes>"
# Bounds on the spec (upstream has none). The same numbers are in the CRD schema (maxLength,
# maximum), so the apiserver refuses first; the webhook and the controller check them again
# before parsing anything (a CronJob may predate the schema, or the webhook be off).
MAX_SCHEDULE_LENGTH = 1024
"""Characters in spec.schedule. Spelling out every value of every field by number or name
("0,1,...,59 0,...,23 1,...,31 jan,...,dec sun,...,sat") takes under 400, so any
distinct schedule fits; real ones are under 100. Longer input is only cost (each status
and event copy) and was a denial-of-service vector (a 1.5 MB list took 35 s per review)."""
MAX_TIME_ZONE_LENGTH = 64
"""Characters in spec.timeZone: the longest IANA name has 32 ("America/Argentina/
ComodRivadavia"); twice that leaves room for future names and bounds the CEL rule's cost."""
MAX_STARTING_DEADLINE_SECONDS = 366 * 24 * 3600
"""spec.startingDeadlineSeconds: one leap year, so even ``@yearly`` can say "start a run up
to a whole year late". Beyond that a deadline means nothing (the controller starts at most
the most recent missed time anyway, and counts missed times only inside (now - D, now]),
while int64 values made datetime arithmetic overflow."""
MAX_HISTORY_LIMIT = 1000
"""successful/failedJobsHistoryLimit: every kept Job stays in the controller's cache and is
sorted on every sync of its CronJob, so keep history bounded; use logs or a Job TTL
controller for longer audit trails."""

ConcurrencyPolicy = Literal["Allow", "Forbid", "Replace"]
CONCURRENCY_POLICIES: tuple[ConcurrencyPolicy, ...] = ("Allow", "Forbid", "Replace")


class ErrorType(StrEnum):
    """apimachinery's field.ErrorType strings."""

    REQUIRED = "Required value"
    INVALID = "Invalid value"
    NOT_SUPPORTED = "Unsupported value"
    TOO_LONG = "Too long"

    @property
    def reason(self) -> str:
        """The StatusCause reason, e.g. ``FieldValueInvalid``."""
        return {
            ErrorType.REQUIRED: "FieldValueRequired", ErrorType.INVALID: "FieldValueInvalid",
            ErrorType.NOT_SUPPORTED: "FieldValueNotSupported",
            ErrorType.TOO_LONG: "FieldValueTooLong",
        }[self]


_NO_VALUE = object()


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem with one field: ``field`` is a path like ``spec.schedule``."""

    field: str
    type: ErrorType
    detail: str
    value: object = _NO_VALUE

    @property
    def body(self) -> str:
        """The message without the field path, e.g. ``Invalid value: "x": bad``."""
        body = str(self.type)
        if self.type not in (ErrorType.REQUIRED, ErrorType.TOO_LONG) and (
                self.value is not _NO_VALUE):
            body += f": {_go_value(self.value)}"
        return f"{body}: {self.detail}" if self.detail else body

    def __str__(self) -> str:
        return f"{self.field}: {self.body}"


def _go_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


class InvalidCronJobError(ValueError):
    """A CronJob whose fields have the wrong types; ``errors`` says which."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = tuple(errors)


class UnknownTimeZoneError(ValueError):
    """``spec.timeZone`` is not a usable IANA time zone name; ``str()`` says why."""


# Names tzdata lists but that are not zones a user means: "Factory" is tzdata's placeholder
# ("Local time zone must be set"); the others are not in the package's list, but are files in
# a host's zoneinfo directory, so we name them in the message.
_NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})
_NOT_ZONE_PREFIXES = ("posix/", "right/")


@lru_cache(maxsize=1)
def _canonical_zones() -> frozenset[str]:
    """The zone names of the tzdata package we ship (its ``zones`` file), minus Factory."""
    text = resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8")
    return frozenset(text.split()) - _NOT_ZONES


@lru_cache(maxsize=1024)
def load_zone(name: str | None) -> tzinfo:
    """The zone for ``spec.timeZone`` (None means UTC); raises UnknownTimeZoneError.

    Only canonical names from the tzdata package are accepted, and the zone is read from that
    package (not the host's zoneinfo), so every replica and the webhook agree.
    """
    if name is None:
        return UTC
    if not name:
        raise UnknownTimeZoneError("must be unset or a non-empty IANA time zone name")
    if len(name) > MAX_TIME_ZONE_LENGTH:
        raise UnknownTimeZoneError(f"must be no more than {MAX_TIME_ZONE_LENGTH} characters")
    if name.startswith(("TZ=", "CRON_TZ=")):
        raise UnknownTimeZoneError(
            'must be a bare IANA time zone name such as "Europe/Berlin", without TZ= or CRON_TZ=')
    if name.lower() == "local":
        raise UnknownTimeZoneError(
            "must be an explicit IANA time zone name; Local (the controller's zone) is not allowed")
    if name in _NOT_ZONES or name.startswith(_NOT_ZONE_PREFIXES):
        raise UnknownTimeZoneError(
            "must be a canonical IANA time zone name such as \"Europe/Berlin\"; localtime, "
            "posixrules, Factory, posix/... and right/... are not allowed")
    if name not in _canonical_zones():
        raise UnknownTimeZoneError(
            "unknown time zone: not in the IANA time zone database "
            '(use a name such as "America/New_York" or "UTC")')
    path = resources.files("tzdata.zoneinfo").joinpath(*name.split("/"))
    with path.open("rb") as data:
        return ZoneInfo.from_file(data, key=name)


_MUST_BE_INT = "must be an integer"
_TYPE_DETAILS = frozenset({"must be a string", _MUST_BE_INT, "must be a boolean",
                           "must be an object", "must be a map of strings to strings"})


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _string_map(value: object) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def validate(obj: Mapping[str, object]) -> list[FieldError]:
    """Every problem with a CronJob object (defaults assumed for absent fields)."""
    errors: list[FieldError] = []
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if isinstance(name, str) and len(name) > MAX_NAME_LENGTH:
        errors.append(FieldError("metadata.name", ErrorType.INVALID,
                                 f"must be no more than {MAX_NAME_LENGTH} characters", name))
    spec = obj.get("spec")
    if spec is None:
        return [*errors, FieldError("spec", ErrorType.REQUIRED, "")]
    if not isinstance(spec, Mapping):
        return [*errors, FieldError("spec", ErrorType.INVALID, "must be an object", spec)]
    errors.extend(_validate_schedule(spec))
    errors.extend(_validate_time_zone(spec.get("timeZone")))
    for key, maximum in _INT_MAXIMA.items():
        value = spec.get(key)
        if value is not None and not _is_int(value):
            errors.append(FieldError(f"spec.{key}", ErrorType.INVALID, _MUST_BE_INT, value))
        elif value is not None and cast(int, value) < 0:
            errors.append(FieldError(f"spec.{key}", ErrorType.INVALID,
                                     "must be greater than or equal to 0", value))
        elif value is not None and cast(int, value) > maximum:
            errors.append(FieldError(f"spec.{key}", ErrorType.INVALID,
                                     f"must be less than or equal to {maximum}", value))
    policy = spec.get("concurrencyPolicy")
    if policy is not None and policy not in CONCURRENCY_POLICIES:
        supported = ", ".join(f'"{p}"' for p in CONCURRENCY_POLICIES)
        errors.append(FieldError("spec.concurrencyPolicy", ErrorType.NOT_SUPPORTED,
                                 f"supported values: {supported}", policy))
    suspend = spec.get("suspend")
    if suspend is not None and not isinstance(suspend, bool):
        errors.append(FieldError("spec.suspend", ErrorType.INVALID, "must be a boolean", suspend))
    errors.extend(_validate_job_template(spec.get("jobTemplate")))
    return errors


_INT_MAXIMA: Mapping[str, int] = MappingProxyType({
    "startingDeadlineSeconds": MAX_STARTING_DEADLINE_SECONDS,
    "successfulJobsHistoryLimit": MAX_HISTORY_LIMIT,
    "failedJobsHistoryLimit": MAX_HISTORY_LIMIT,
})


def _too_long(path: str, limit: int) -> FieldError:
    # As apimachinery's field.TooLong: the value itself is not repeated in the message.
    return FieldError(path, ErrorType.TOO_LONG, f"may not be more than {limit} characters")


def _validate_schedule(spec: Mapping[str, object]) -> list[FieldError]:
    schedule = spec.get("schedule")
    if schedule is None or schedule == "":
        return [FieldError("spec.schedule", ErrorType.REQUIRED, "")]
    if not isinstance(schedule, str):
        return [FieldError("spec.schedule", ErrorType.INVALID, "must be a string", schedule)]
    if len(schedule) > MAX_SCHEDULE_LENGTH:  # before parsing: refusing costs O(1)
        return [_too_long("spec.schedule", MAX_SCHEDULE_LENGTH)]
    try:
        check(schedule)
    except ScheduleError as err:
        return [FieldError("spec.schedule", ErrorType.INVALID, str(err), schedule)]
    return []


def _validate_time_zone(zone: object) -> list[FieldError]:
    if zone is None:
        return []
    if not isinstance(zone, str):
        return [FieldError("spec.timeZone", ErrorType.INVALID, "must be a string", zone)]
    if len(zone) > MAX_TIME_ZONE_LENGTH:
        return [_too_long("spec.timeZone", MAX_TIME_ZONE_LENGTH)]
    try:
        load_zone(zone)
    except UnknownTimeZoneError as err:
        return [FieldError("spec.timeZone", ErrorType.INVALID, str(err), zone)]
    return []


def _validate_job_template(template: object) -> list[FieldError]:
    path = "spec.jobTemplate"
    if template is None:
        return [FieldError(path, ErrorType.REQUIRED, "")]
    if not isinstance(template, Mapping):
        return [FieldError(path, ErrorType.INVALID, "must be an object", template)]
    errors: list[FieldError] = []
    metadata = template.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, Mapping):
            errors.append(FieldError(f"{path}.metadata", ErrorType.INVALID, "must be an object",
                                     metadata))
        else:
            for key in ("labels", "annotations"):
                value = metadata.get(key)
                if value is not None and not _string_map(value):
                    errors.append(FieldError(f"{path}.metadata.{key}", ErrorType.INVALID,
                                             "must be a map of strings to strings", value))
    job_spec = template.get("spec")
    if job_spec is None:
        errors.append(FieldError(f"{path}.spec", ErrorType.REQUIRED, ""))
    elif not isinstance(job_spec, Mapping):
        errors.append(FieldError(f"{path}.spec", ErrorType.INVALID, "must be an object",
                                 job_spec))
    return errors


def type_errors(obj: Mapping[str, object]) -> list[FieldError]:
    """The errors of :func:`validate` that leave ``obj`` unreadable: missing required fields
    and fields of the wrong type (values that are merely invalid are not among them)."""
    return [e for e in validate(obj)
            if e.type is ErrorType.REQUIRED or e.detail in _TYPE_DETAILS]
