"""CronJob validation: the field errors and time zones the webhook and the controller share.

Contract:

* :func:`parse` reads a raw CronJob (an AdmissionReview's object, a client's answer) as the
  typed :class:`cronjob_controller.crd.CronJob` (strict types, no dict kept). A field of the
  wrong type is a :class:`FieldError` naming it (``spec.suspend: Invalid value: "yes": must
  be a boolean``); an optional one is dropped and reading goes on, so every such field is
  reported; a required one ends the reading (no CronJob, only the errors).
* :func:`validate` is the one validation of a typed CronJob, shared by the admission webhook
  and the controller (a webhook may not be installed). It never raises; it returns
  :class:`FieldError` s whose ``str()`` reads like the apiserver's
  (``spec.schedule: Invalid value: "61 * * * *": ...``). Every user-controlled string and
  integer is checked against its ``MAX_*`` bound (:mod:`cronjob_controller.constants`, the
  numbers the CRD schema publishes) before any parsing, and parsing is linear, so one
  admission review costs O(limit) at most. :func:`check` is :func:`parse` then
  :func:`validate`, the errors in one order (metadata, schedule, time zone, the integers,
  the job template).
* :func:`condition_reason` names the Ready=False reason for a list of field errors.
* Time zones are the canonical names of the ``tzdata`` package we ship (its ``zones`` list),
  loaded from that package, never the host's ``/usr/share/zoneinfo``: the webhook and the
  controller agree whatever image they run in, and ``localtime``, ``posixrules``,
  ``Factory``, ``posix/...``, ``right/...`` and ``Local`` are refused (:func:`load_zone`).

Users import these names from :mod:`cronjob_controller.api`, which re-exports them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, tzinfo
from enum import StrEnum
from functools import lru_cache
from importlib import resources
from typing import Annotated, Any, Literal, Union, get_args, get_origin
from zoneinfo import ZoneInfo

import msgspec

from cronjob_controller import constants as names
from cronjob_controller.crd import CronJob, CronJobSpec
from cronjob_controller.schedule import ScheduleError
from cronjob_controller.schedule import check as check_schedule
from pyctrl.api import is_required, prepare

__all__ = [
    "ErrorType", "FieldError", "UnknownTimeZoneError", "check", "condition_reason",
    "load_zone", "parse", "validate",
]


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
    if len(name) > names.MAX_TIME_ZONE_LENGTH:
        raise UnknownTimeZoneError(f"must be no more than {names.MAX_TIME_ZONE_LENGTH} characters")
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


def condition_reason(errors: Sequence[FieldError]) -> str:
    """The Ready=False reason (and Warning event reason) for a non-empty error list."""
    fields = {e.field for e in errors}
    if "spec.schedule" in fields:
        return names.REASON_INVALID_SCHEDULE
    if "spec.timeZone" in fields:
        return names.REASON_UNKNOWN_TIME_ZONE
    return names.REASON_INVALID_SPEC


def validate(cronjob: CronJob) -> list[FieldError]:
    """Every problem with a typed CronJob (module docstring)."""
    errors: list[FieldError] = []
    name = cronjob.metadata.name
    if len(name) > names.MAX_NAME_LENGTH:
        errors.append(FieldError("metadata.name", ErrorType.INVALID,
                                 f"must be no more than {names.MAX_NAME_LENGTH} characters", name))
    spec = cronjob.spec
    errors.extend(_validate_schedule(spec.schedule))
    errors.extend(_validate_time_zone(spec.time_zone))
    for key, value, maximum in (
            ("startingDeadlineSeconds", spec.starting_deadline_seconds,
             names.MAX_STARTING_DEADLINE_SECONDS),
            ("successfulJobsHistoryLimit", spec.successful_jobs_history_limit,
             names.MAX_HISTORY_LIMIT),
            ("failedJobsHistoryLimit", spec.failed_jobs_history_limit, names.MAX_HISTORY_LIMIT)):
        if value is not None and value < 0:
            errors.append(FieldError(f"spec.{key}", ErrorType.INVALID,
                                     "must be greater than or equal to 0", value))
        elif value is not None and value > maximum:
            errors.append(FieldError(f"spec.{key}", ErrorType.INVALID,
                                     f"must be less than or equal to {maximum}", value))
    errors.extend(_validate_job_template(spec.job_template))
    return errors


def _too_long(path: str, limit: int) -> FieldError:
    # As apimachinery's field.TooLong: the value itself is not repeated in the message.
    return FieldError(path, ErrorType.TOO_LONG, f"may not be more than {limit} characters")


def _validate_schedule(schedule: str) -> list[FieldError]:
    if schedule == "":
        return [FieldError("spec.schedule", ErrorType.REQUIRED, "")]
    if len(schedule) > names.MAX_SCHEDULE_LENGTH:  # before parsing: refusing costs O(1)
        return [_too_long("spec.schedule", names.MAX_SCHEDULE_LENGTH)]
    try:
        check_schedule(schedule)
    except ScheduleError as err:
        return [FieldError("spec.schedule", ErrorType.INVALID, str(err), schedule)]
    return []


def _validate_time_zone(zone: str | None) -> list[FieldError]:
    if zone is None:
        return []
    if len(zone) > names.MAX_TIME_ZONE_LENGTH:
        return [_too_long("spec.timeZone", names.MAX_TIME_ZONE_LENGTH)]
    try:
        load_zone(zone)
    except UnknownTimeZoneError as err:
        return [FieldError("spec.timeZone", ErrorType.INVALID, str(err), zone)]
    return []


def _string_map(value: object) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _validate_job_template(template: Mapping[str, Any]) -> list[FieldError]:
    """The embedded JobTemplateSpec stays a dict (crd.py): its metadata and spec checked here."""
    path = "spec.jobTemplate"
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


# -- reading a raw CronJob -----------------------------------------------------------------

# At most this many wrongly typed fields are reported (each costs one more decode attempt).
_MAX_TYPE_ERRORS = 16
_ERROR = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_EXPECTED = re.compile(r"^Expected `(?P<want>[^`]*)`, got `(?P<got>[^`]*)`$")
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]*)`$")
_TYPE_DETAILS = {"str": "must be a string", "int": "must be an integer",
                 "bool": "must be a boolean", "object": "must be an object",
                 "array": "must be an array", "datetime": "must be an RFC 3339 date-time"}
# The order check() lists errors in (validate()'s own order); other fields go last.
_FIELD_ORDER = ("metadata.name", "metadata", "spec.schedule", "spec.timeZone",
                "spec.startingDeadlineSeconds", "spec.successfulJobsHistoryLimit",
                "spec.failedJobsHistoryLimit", "spec.concurrencyPolicy", "spec.suspend",
                "spec.jobTemplate", "spec", "status")


def parse(raw: Mapping[str, Any]) -> tuple[CronJob | None, list[FieldError]]:
    """``raw`` as a typed CronJob and the wrongly typed fields (module docstring); ``raw`` is
    only read."""
    errors: list[FieldError] = []
    current: Mapping[str, Any] = raw
    prepare(CronJob)  # msgspec's first use of a type is not thread-safe (webhook workers)
    spec = raw.get("spec")
    if isinstance(spec, Mapping):
        # Required by the schema but defaulted when decoded (crd.py): absent is an error here.
        for info in msgspec.structs.fields(CronJobSpec):
            if is_required(info.type) and spec.get(info.encode_name) is None:
                return None, [FieldError(f"spec.{info.encode_name}", ErrorType.REQUIRED, "")]
    for _ in range(_MAX_TYPE_ERRORS):
        try:
            return msgspec.convert(current, CronJob, strict=True), errors
        except msgspec.ValidationError as err:
            error, parts = _field_error(str(err), current)
        errors.append(error)
        tp, required = _field_type(parts)
        if required or tp is None or error.type is ErrorType.REQUIRED:
            break
        current = _without(current, parts)
    return None, errors


def check(raw: Mapping[str, Any]) -> list[FieldError]:
    """Every problem with a raw CronJob: :func:`parse`'s, then :func:`validate`'s."""
    cronjob, errors = parse(raw)
    if cronjob is not None:
        errors = [*errors, *validate(cronjob)]
    return sorted(errors, key=_order)


def _order(error: FieldError) -> int:
    for i, prefix in enumerate(_FIELD_ORDER):
        if error.field == prefix or error.field.startswith((prefix + ".", prefix + "[")):
            return i
    return len(_FIELD_ORDER)


def _field_error(message: str, raw: Mapping[str, Any]) -> tuple[FieldError, list[str]]:
    """The FieldError of one msgspec ValidationError message, and the path of its field."""
    found = _ERROR.match(message)
    what = found.group("what") if found else message
    path = (found.group("path") or "") if found else ""
    # "$.metadata.labels[...]" (a map's value) and "[0]" (a list's item) end the field path.
    parts = [p for p in path.split("[", 1)[0].split(".") if p]
    field = ".".join(parts)
    missing = _MISSING.match(what)
    if missing:
        parts.append(missing.group("field"))
        return FieldError(".".join(parts), ErrorType.REQUIRED, ""), parts
    value = _value_at(raw, parts)
    expected = _EXPECTED.match(what)
    if expected:
        if expected.group("got") == "null":
            return FieldError(field, ErrorType.REQUIRED, ""), parts
        want = expected.group("want").removesuffix(" | null")
        detail = _TYPE_DETAILS.get(want, f"must be {want}")
        if "[...]" in path and want == "str":
            detail = "must be a map of strings to strings"
        return FieldError(field, ErrorType.INVALID, detail, value), parts
    if what.startswith("Invalid enum value"):
        supported = ", ".join(f'"{v}"' for v in _literal_values(_field_type(parts)[0]))
        return FieldError(field, ErrorType.NOT_SUPPORTED, f"supported values: {supported}",
                          value), parts
    if what.startswith("Invalid RFC3339"):
        return FieldError(field, ErrorType.INVALID, _TYPE_DETAILS["datetime"], value), parts
    return FieldError(field, ErrorType.INVALID, what, value), parts


def _value_at(raw: Mapping[str, Any], parts: Sequence[str]) -> object:
    node: object = raw
    for part in parts:
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _without(raw: Mapping[str, Any], parts: Sequence[str]) -> dict[str, Any]:
    """A copy of ``raw`` without the field at ``parts`` (only the path is copied)."""
    out = dict(raw)
    node = out
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, Mapping):
            return out
        node[part] = node = dict(child)
    node.pop(parts[-1], None)
    return out


def _unwrap(tp: Any) -> Any:
    """``tp`` without Annotated and ``| None``."""
    while True:
        if get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
        elif get_origin(tp) is Union or type(tp).__name__ == "UnionType":
            rest = [a for a in get_args(tp) if a is not type(None)]
            if len(rest) != 1:
                return tp
            tp = rest[0]
        else:
            return tp


def _field_type(parts: Sequence[str]) -> tuple[Any, bool]:
    """The declared type of the CronJob field at ``parts`` and whether it is required
    (``(None, True)`` for a path that is not a declared field)."""
    tp: Any = CronJob
    required = True
    for part in parts:
        struct = _unwrap(tp)
        if not (isinstance(struct, type) and issubclass(struct, msgspec.Struct)):
            return None, True
        info = next((f for f in msgspec.structs.fields(struct) if f.encode_name == part), None)
        if info is None:
            return None, True
        tp, required = info.type, info.required or is_required(info.type)
    return tp, required



def _literal_values(tp: Any) -> tuple[object, ...]:
    tp = _unwrap(tp)
    return get_args(tp) if get_origin(tp) is Literal else ()
