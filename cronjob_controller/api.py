"""The batch.pyctrl.io/v1 CronJob API: constants, defaulting, validation, a typed view.

This module is the API's one import path (``from cronjob_controller import api``; ``api.X``):
it re-exports three modules split along their seams, whose docstrings state the contracts:

* :mod:`cronjob_controller.apitypes`: group/version/kind, condition reasons, time formats
  (:func:`parse_time`, :func:`format_rfc3339`; metav1.Time is ``pyctrl.kube.format_time``)
  and the immutable typed view (:meth:`CronJob.from_dict`, which applies defaults and raises
  :class:`InvalidCronJobError` only for wrong types).
* :mod:`cronjob_controller.defaults`: :data:`DEFAULTS`, :func:`default_patch`,
  :func:`with_defaults` (exactly the CRD schema's defaults).
* :mod:`cronjob_controller.validation`: :func:`validate` (shared by the webhook and the
  controller; never raises), the ``MAX_*`` bounds mirrored in the CRD schema, and
  :func:`load_zone` (canonical tzdata names only).
"""

from __future__ import annotations

from cronjob_controller.apitypes import (
    API_VERSION,
    CONDITION_READY,
    CRONJOBS,
    GROUP,
    KIND,
    REASON_INVALID_SCHEDULE,
    REASON_INVALID_SPEC,
    REASON_SCHEDULED,
    REASON_SUSPENDED,
    REASON_UNKNOWN_TIME_ZONE,
    SCHEDULED_TIMESTAMP_ANNOTATION,
    VERSION,
    Condition,
    CronJob,
    CronJobSpec,
    CronJobStatus,
    JobTemplate,
    ObjectReference,
    condition_reason,
    format_rfc3339,
    parse_time,
)
from cronjob_controller.defaults import DEFAULTS, default_patch, with_defaults
from cronjob_controller.validation import (
    CONCURRENCY_POLICIES,
    MAX_HISTORY_LIMIT,
    MAX_NAME_LENGTH,
    MAX_SCHEDULE_LENGTH,
    MAX_STARTING_DEADLINE_SECONDS,
    MAX_TIME_ZONE_LENGTH,
    ConcurrencyPolicy,
    ErrorType,
    FieldError,
    InvalidCronJobError,
    UnknownTimeZoneError,
    load_zone,
    validate,
)

__all__ = [
    "API_VERSION", "CONCURRENCY_POLICIES", "CONDITION_READY", "CRONJOBS", "DEFAULTS", "GROUP",
    "KIND", "MAX_HISTORY_LIMIT", "MAX_NAME_LENGTH", "MAX_SCHEDULE_LENGTH",
    "MAX_STARTING_DEADLINE_SECONDS", "MAX_TIME_ZONE_LENGTH", "REASON_INVALID_SCHEDULE",
    "REASON_INVALID_SPEC", "REASON_SCHEDULED", "REASON_SUSPENDED", "REASON_UNKNOWN_TIME_ZONE",
    "SCHEDULED_TIMESTAMP_ANNOTATION", "VERSION", "ConcurrencyPolicy", "Condition", "CronJob",
    "CronJobSpec", "CronJobStatus", "ErrorType", "FieldError", "InvalidCronJobError",
    "JobTemplate", "ObjectReference", "UnknownTimeZoneError", "condition_reason",
    "default_patch", "format_rfc3339", "load_zone", "parse_time", "validate",
    "with_defaults",
]
