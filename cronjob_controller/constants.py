"""The batch.pyctrl.io/v1 CronJob API's names and bounds, stated once.

Contract: group/version/kind, the scheduled-timestamp annotation, the ``Ready`` condition's
reasons and the ``MAX_*`` bounds on user input, which the CRD schema
(:mod:`cronjob_controller.crd`) publishes and :func:`cronjob_controller.api.validate` checks.
:func:`format_rfc3339` writes Go's ``time.RFC3339`` in any zone (the annotation, messages);
metav1.Time is ``pyctrl.kube.format_time``. Users import these names from
:mod:`cronjob_controller.api`, which re-exports them.
"""

from __future__ import annotations

from typing import Literal

from pyctrl.kube import format_rfc3339

__all__ = [
    "API_VERSION", "CONCURRENCY_POLICIES", "CONDITION_READY", "GROUP", "KIND",
    "MAX_HISTORY_LIMIT", "MAX_NAME_LENGTH", "MAX_SCHEDULE_LENGTH",
    "MAX_STARTING_DEADLINE_SECONDS", "MAX_TIME_ZONE_LENGTH", "REASON_INVALID_SCHEDULE",
    "REASON_INVALID_SPEC", "REASON_SCHEDULED", "REASON_SUSPENDED", "REASON_UNKNOWN_TIME_ZONE",
    "SCHEDULED_TIMESTAMP_ANNOTATION", "VERSION", "ConcurrencyPolicy", "format_rfc3339",
]

GROUP = "batch.pyctrl.io"
VERSION = "v1"
KIND = "CronJob"
API_VERSION = f"{GROUP}/{VERSION}"
SCHEDULED_TIMESTAMP_ANNOTATION = "batch.pyctrl.io/scheduled-timestamp"

# status.conditions: one "Ready" condition. True: the spec is valid and the controller
# schedules it (reason Scheduled, or Suspended); False: the reason names the problem.
CONDITION_READY = "Ready"
REASON_SCHEDULED = "Scheduled"
REASON_SUSPENDED = "Suspended"
REASON_INVALID_SCHEDULE = "InvalidSchedule"  # also the Warning event reason
REASON_UNKNOWN_TIME_ZONE = "UnknownTimeZone"  # also the Warning event reason
REASON_INVALID_SPEC = "InvalidSpec"

ConcurrencyPolicy = Literal["Allow", "Forbid", "Replace"]
CONCURRENCY_POLICIES: tuple[ConcurrencyPolicy, ...] = ("Allow", "Forbid", "Replace")

MAX_NAME_LENGTH = 52  # 63 (DNS label) - 11: Job names append "-<unix minutes>"
# Bounds on the spec (upstream has none; docs/DESIGN.md says why each is what it is). The CRD
# schema publishes them (maxLength, maximum), so the apiserver refuses first; the webhook and
# the controller check them again before parsing anything.
MAX_SCHEDULE_LENGTH = 1024
"""Characters in spec.schedule (any distinct schedule spelled out fits in under 400)."""
MAX_TIME_ZONE_LENGTH = 64
"""Characters in spec.timeZone (the longest IANA name has 32)."""
MAX_STARTING_DEADLINE_SECONDS = 366 * 24 * 3600
"""spec.startingDeadlineSeconds: one leap year."""
MAX_HISTORY_LIMIT = 1000
"""successful/failedJobsHistoryLimit: kept Jobs stay cached and are sorted on every sync."""
