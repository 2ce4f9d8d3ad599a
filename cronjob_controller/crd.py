"""The batch.pyctrl.io/v1 CronJob as pyctrl.api types: the one declaration of its shape.

The controller, the webhook and the CLI read CronJobs as :class:`CronJob` (from a typed
cache, or :func:`cronjob_controller.api.decode`); crds/ is generated from here
(``python -m pyctrl gen crd cronjob_controller.crd --out crds``; tests/unit/cronjob/test_crd.py
runs it with ``--check``). :data:`CRONJOBS` is derived from :class:`CronJob`.

Contract (what the schema enforces):

* Types, enums, minimums and defaults (the field defaults of :class:`CronJobSpec`, which the
  mutating webhook applies too: :data:`cronjob_controller.api.DEFAULTS` is derived from them).
  Every string and integer a user sets is bounded by a ``MAX_*`` of
  :mod:`cronjob_controller.constants`, which also bounds the CEL rules' cost.
* A CEL rule caps the name at ``MAX_NAME_LENGTH`` (52) characters, so Job names
  (``<name>-<unix minutes>``) fit in 63.
* What CEL cannot check (the schedule dialect, the tzdata zone list) is checked by the
  validating webhook and again by the controller (:func:`cronjob_controller.api.validate`).
* ``status.activeCount`` backs the ACTIVE column; NEXT is a plain string column; READY and
  REASON show the Ready condition.
* ``spec.jobTemplate`` stays a ``dict``: the batch/v1 JobTemplateSpec is passed through
  verbatim to each Job, so fields newer than the pinned models survive. Its schema is the real
  one of the pinned Kubernetes version, its metadata trimmed to labels and annotations (all
  the controller copies onto each Job).
* ``status.active`` is None when the stored status has no ``active`` at all and ``[]`` when
  it is empty, so a status write can tell the two apart (an unset field is filled in only
  along with a write that happens anyway).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from cronjob_controller.constants import (
    API_VERSION,
    KIND,
    MAX_HISTORY_LIMIT,
    MAX_NAME_LENGTH,
    MAX_SCHEDULE_LENGTH,
    MAX_STARTING_DEADLINE_SECONDS,
    MAX_TIME_ZONE_LENGTH,
    ConcurrencyPolicy,
)
from pyctrl import api
from pyctrl.api import (
    Condition,
    Embedded,
    ListType,
    MapType,
    Maximum,
    MaxLength,
    Minimum,
    MinLength,
    PrinterColumn,
    Required,
    Rule,
)

__all__ = ["CRONJOBS", "CronJob", "CronJobSpec", "CronJobStatus", "JobReference",
           "ObservedSchedule"]

# The webhook and the controller check the name against the tzdata zone list; this rule
# refuses, already at the schema, the names that are files in a host's zoneinfo directory
# without being zones a user means.
_ZONE_RULE = Rule(
    "!(self in ['localtime', 'posixrules', 'Factory']) && self.lowerAscii() != 'local' && "
    "!self.startsWith('posix/') && !self.startsWith('right/')",
    message="must be a canonical IANA time zone name such as Europe/Berlin; Local, "
            "localtime, posixrules, Factory, posix/... and right/... are not allowed",
    reason="FieldValueInvalid")


class CronJobSpec(api.Struct):
    # Required (the API server refuses a CronJob without them) yet defaulted when decoded: a
    # stored object that lacks one (written past a laxer schema) reaches validate, which
    # reports it, instead of failing the whole typed cache.
    schedule: Annotated[
        str, Required, MinLength(1), MaxLength(MAX_SCHEDULE_LENGTH),
        "Cron schedule in the Kubernetes dialect: 5 fields (minute hour day-of-month month "
        'day-of-week), descriptors such as @daily, or "@every <duration>". Put a time zone in '
        "timeZone, not here."] = ""
    job_template: Annotated[
        dict[str, Any], Required,
        Embedded("io.k8s.api.batch.v1.JobTemplateSpec", metadata_fields=("annotations",
                                                                           "labels"),
                 metadata_description="Labels and annotations, copied to each Job (nothing "
                                      "else is).",
                 required=("spec",)),
        "The batch/v1 JobTemplateSpec of the Jobs to create."] = api.field(
        default_factory=dict)
    time_zone: Annotated[
        str, MinLength(1), MaxLength(MAX_TIME_ZONE_LENGTH), _ZONE_RULE,
        "IANA time zone name (e.g. Europe/Berlin); unset means UTC."] | None = None
    starting_deadline_seconds: Annotated[
        api.Int64, Minimum(0), Maximum(MAX_STARTING_DEADLINE_SECONDS),
        "A run missed by this many seconds or more is skipped (0 never starts a late run). "
        "At most 31622400 (366 days)."] | None = None
    # These defaults are the schema's and the mutating webhook's (api.DEFAULTS).
    concurrency_policy: Annotated[
        ConcurrencyPolicy,
        "What to do when a run is due while an earlier one is active."] = "Allow"
    suspend: Annotated[bool, "Suspend future runs; running Jobs are not affected."] = False
    successful_jobs_history_limit: Annotated[
        api.Int32, Minimum(0), Maximum(MAX_HISTORY_LIMIT),
        "How many completed Jobs to keep (at most 1000)."] = 3
    failed_jobs_history_limit: Annotated[
        api.Int32, Minimum(0), Maximum(MAX_HISTORY_LIMIT),
        "How many failed Jobs to keep (at most 1000)."] = 1


class JobReference(api.Struct):
    """An entry of status.active (a core ObjectReference to a Job)."""

    api_version: str = ""
    kind: str = ""
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""


class ObservedSchedule(api.Struct):
    digest: Annotated[str, MaxLength(128)] = ""
    # The previous version's form (read, then removed): None when absent, so that an empty
    # value still counts as present and is removed too.
    schedule: str | None = None
    time_zone: str | None = None
    since: datetime | None = None


class CronJobStatus(api.Struct):
    active: Annotated[list[Annotated[JobReference, MapType("atomic")]], ListType("atomic"),
                      "Unfinished Jobs controlled by this CronJob."] | None = None
    active_count: Annotated[api.Int32, Minimum(0),
                            "Number of entries in active (for the ACTIVE column)."] | None = None
    last_schedule_time: Annotated[
        datetime, "The last time a Job was started for a scheduled time."] | None = None
    last_successful_time: Annotated[
        datetime, "Latest completion time among this CronJob's Complete Jobs."] | None = None
    next_schedule_time: Annotated[datetime, "The next scheduled time, if any."] | None = None
    observed_schedule: Annotated[
        ObservedSchedule,
        "A digest of the schedule and timeZone the controller last saw, and since when (set "
        "only by an edit); an edit never starts a run for a time before it. schedule/timeZone "
        "are the previous version's form, still read."] | None = None
    observed_generation: Annotated[
        api.Int64, Minimum(0), "The metadata.generation this status was computed from."
    ] | None = None
    conditions: Annotated[list[Condition], ListType.map("type"),
                          "Standard conditions; Ready explains any problem with the spec."
                          ] = api.field(default_factory=list)


@api.kind(
    API_VERSION, KIND, short_names=("pcj",), categories=("pyctrl",),
    description="CronJob runs a Job on a cron schedule.",
    printer_columns=(
        PrinterColumn("Schedule", "string", ".spec.schedule"),
        PrinterColumn("Timezone", "string", ".spec.timeZone"),
        PrinterColumn("Suspend", "boolean", ".spec.suspend"),
        PrinterColumn("Active", "integer", ".status.activeCount"),
        PrinterColumn("Last Schedule", "date", ".status.lastScheduleTime"),
        PrinterColumn("Next", "string", ".status.nextScheduleTime",
                      description="A timestamp, not an age (kubectl prints future dates as "
                                  "<invalid>)."),
        PrinterColumn("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Reason", "string", '.status.conditions[?(@.type=="Ready")].reason'),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    ),
    rules=(Rule(f"self.metadata.name.size() <= {MAX_NAME_LENGTH}",
                message=f"must be no more than {MAX_NAME_LENGTH} characters, so that Job names "
                        "(<name>-<unix minutes>) fit in 63",
                reason="FieldValueInvalid", field_path=".metadata.name"),))
class CronJob(api.Object):
    spec: Annotated[CronJobSpec, "The desired schedule and the Job to run."]
    status: Annotated[CronJobStatus,
                      "Observed state, rebuilt by the controller on every sync."] = api.field(
        default_factory=CronJobStatus)


CRONJOBS = api.resource_for(CronJob)
"""Where CronJobs are served (``batch.pyctrl.io/v1``, ``cronjobs``, namespaced)."""
