"""The batch.pyctrl.io/v1 CronJob API: its type, constants, defaulting and validation.

This module is the API's one import path (``from cronjob_controller import api``; ``api.X``).
It re-exports the modules split along their seams, whose docstrings state the contracts:

* :mod:`cronjob_controller.crd`: the typed kind (:class:`CronJob`, :class:`CronJobSpec`,
  :class:`CronJobStatus`, :class:`JobReference`, :class:`ObservedSchedule`; pyctrl.api
  Structs, frozen: change a copy with ``pyctrl.api.replace``), the one declaration of the
  CronJob's shape, and :data:`CRONJOBS`, derived from it.
* :mod:`cronjob_controller.constants`: group/version/kind, condition reasons, the
  scheduled-timestamp annotation, the ``MAX_*`` bounds and :func:`format_rfc3339`
  (metav1.Time is ``pyctrl.kube.format_time``, parsing ``pyctrl.kube.parse_micro_time``).
* :mod:`cronjob_controller.defaults`: :data:`DEFAULTS` (derived from :class:`CronJobSpec`),
  :func:`default_patch`, :func:`with_defaults`.
* :mod:`cronjob_controller.validation`: :func:`validate` (a typed CronJob; shared by the
  webhook and the controller; never raises), :func:`parse` / :func:`check` (a raw object:
  wrongly typed fields as FieldErrors), :func:`condition_reason` and :func:`load_zone`
  (canonical tzdata names only).
"""

from __future__ import annotations

from cronjob_controller.constants import (
    API_VERSION,
    CONCURRENCY_POLICIES,
    CONDITION_READY,
    GROUP,
    KIND,
    MAX_HISTORY_LIMIT,
    MAX_NAME_LENGTH,
    MAX_SCHEDULE_LENGTH,
    MAX_STARTING_DEADLINE_SECONDS,
    MAX_TIME_ZONE_LENGTH,
    REASON_INVALID_SCHEDULE,
    REASON_INVALID_SPEC,
    REASON_SCHEDULED,
    REASON_SUSPENDED,
    REASON_UNKNOWN_TIME_ZONE,
    SCHEDULED_TIMESTAMP_ANNOTATION,
    VERSION,
    ConcurrencyPolicy,
    format_rfc3339,
)
from cronjob_controller.crd import (
    CRONJOBS,
    CronJob,
    CronJobSpec,
    CronJobStatus,
    JobReference,
    ObservedSchedule,
)
from cronjob_controller.defaults import DEFAULTS, default_patch, with_defaults
from cronjob_controller.validation import (
    ErrorType,
    FieldError,
    UnknownTimeZoneError,
    check,
    condition_reason,
    load_zone,
    parse,
    validate,
)

__all__ = [
    "API_VERSION", "CONCURRENCY_POLICIES", "CONDITION_READY", "CRONJOBS", "DEFAULTS", "GROUP",
    "KIND", "MAX_HISTORY_LIMIT", "MAX_NAME_LENGTH", "MAX_SCHEDULE_LENGTH",
    "MAX_STARTING_DEADLINE_SECONDS", "MAX_TIME_ZONE_LENGTH", "REASON_INVALID_SCHEDULE",
    "REASON_INVALID_SPEC", "REASON_SCHEDULED", "REASON_SUSPENDED", "REASON_UNKNOWN_TIME_ZONE",
    "SCHEDULED_TIMESTAMP_ANNOTATION", "VERSION", "ConcurrencyPolicy", "CronJob", "CronJobSpec",
    "CronJobStatus", "ErrorType", "FieldError", "JobReference", "ObservedSchedule",
    "UnknownTimeZoneError", "check", "condition_reason", "default_patch", "format_rfc3339",
    "load_zone", "parse", "validate", "with_defaults",
]
