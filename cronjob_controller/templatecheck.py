"""Would the API server accept the Job a CronJob's template produces? Asked by a dry run.

The CRD schema checks the template's shape; the Job's own validation (a ``restartPolicy``
the Job API allows, a container image, container names that are DNS labels, ...) runs only
when a Job is created, which for ``@daily`` is at midnight. A server-side dry-run create
(``dryRun=All``) runs that validation, and admission, now, and stores nothing.

Contract:

* :func:`dry_run_job` builds the Job the template would produce (as :func:`jobs.build_job`
  does, for the current time) and asks the API server to create it with ``dryRun=All`` in the
  CronJob's namespace. The Job is named by ``generateName`` (``<cronjob-name>-``) so no
  existing Job's name gets in the way, and carries no ownerReference (the CronJob may not
  have a UID yet at admission; the reference is the controller's, not the user's). It returns
  a :class:`Verdict`: ``valid`` True; False with the API server's message for a 422 Invalid;
  None with the reason when the question could not be asked (RBAC forbidden, a timeout, no
  connection, any other error): the caller must not block on that.
* :class:`TemplateVerdicts` remembers one verdict per CronJob key for its (uid, generation):
  a template is asked about once per spec generation.
* :class:`TemplateCheck` is the controller's side: :meth:`TemplateCheck.refusal` is the API
  server's refusal of a CronJob's current template, or None. It asks (and remembers) once per
  (uid, generation), and only for a generation the cached status does not show as observed
  yet, or shows as refused (:data:`REASON_INVALID_JOB_TEMPLATE`, after a restart): a
  CronJob checked before is not asked again, so a restart costs no dry run per CronJob. A
  dry run that could not be made refuses nothing.

The caller bounds the time: the webhook uses a client with a short timeout
(:data:`DRY_RUN_TIMEOUT_SECONDS`), the controller its own client.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

import structlog

from cronjob_controller import jobs
from cronjob_controller.constants import CONDITION_READY
from cronjob_controller.crd import CronJob
from cronjob_controller.expectations import PerKey
from cronjob_controller.validation import load_zone
from pyctrl import Clock
from pyctrl.conditions import find_status_condition
from pyctrl.errors import ApiError, Invalid
from pyctrl.kube import JOBS, Client

__all__ = [
    "DRY_RUN_TIMEOUT_SECONDS",
    "REASON_INVALID_JOB_TEMPLATE",
    "TemplateCheck",
    "TemplateVerdicts",
    "Verdict",
    "dry_run_job",
]

log = structlog.get_logger(__name__)

# The webhook's bound on one dry run (the API server waits for the webhook, and the user for
# the API server; the webhook configuration's own timeout is longer).
DRY_RUN_TIMEOUT_SECONDS = 2.0
# Ready=False reason (and Warning event reason) for a template whose Job the API server refuses.
REASON_INVALID_JOB_TEMPLATE = "InvalidJobTemplate"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The API server's answer: ``valid`` True/False, or None when it could not be asked."""

    valid: bool | None
    message: str = ""


def _zone(cronjob: CronJob) -> tzinfo:
    try:
        return load_zone(cronjob.spec.time_zone)
    except Exception:  # an invalid zone is the validation's to report
        return UTC


def dry_run_body(cronjob: CronJob, namespace: str, now: datetime) -> dict[str, Any]:
    """The Job ``cronjob``'s template would produce at ``now``, named by generateName,
    unowned."""
    body = jobs.build_job(cronjob, now, _zone(cronjob))
    meta: dict[str, Any] = body["metadata"]
    meta.pop("ownerReferences", None)
    base = str(meta.pop("name", "")).rpartition("-")[0]
    if not base:  # a CronJob named by generateName, not yet named at admission
        base = (cronjob.metadata.generate_name or "cronjob").rstrip("-")
    meta["generateName"] = base + "-"
    meta["namespace"] = namespace
    return body


def dry_run_job(client: Client, cronjob: CronJob, namespace: str, now: datetime) -> Verdict:
    """Ask the API server to create the template's Job with ``dryRun=All`` (module docstring)."""
    try:
        client.create(JOBS, dry_run_body(cronjob, namespace, now), namespace, dry_run=True)
    except Invalid as err:
        return Verdict(False, err.message)
    except ApiError as err:
        log.info("job template dry run not possible", namespace=namespace,
                 error=type(err).__name__, problem=err.message)
        return Verdict(None, f"{type(err).__name__}: {err.message}")
    return Verdict(True)


@dataclass(frozen=True, slots=True)
class _Entry:
    uid: str
    generation: object
    verdict: Verdict


class TemplateVerdicts(PerKey[_Entry]):
    """Per CronJob key, the verdict on its template at one (uid, generation)."""

    def get(self, key: str, uid: str, generation: object) -> Verdict | None:
        with self._lock:
            entry = self._by_key.get(key)
            if entry is None or (entry.uid, entry.generation) != (uid, generation):
                return None
            return entry.verdict

    def put(self, key: str, uid: str, generation: object, verdict: Verdict) -> None:
        with self._lock:
            self._by_key[key] = _Entry(uid, generation, verdict)


class TemplateCheck:
    """The controller's dry runs: one per (uid, generation), remembered (module docstring)."""

    def __init__(self, client: Client, clock: Clock) -> None:
        self.client = client
        self.clock = clock
        self.verdicts = TemplateVerdicts()

    def refusal(self, key: str, cronjob: CronJob) -> str | None:
        """The API server's message refusing ``cronjob``'s template, or None."""
        md, status = cronjob.metadata, cronjob.status
        generation = md.generation or None
        verdict = self.verdicts.get(key, md.uid, generation)
        if verdict is None:
            ready = find_status_condition(status.conditions, CONDITION_READY)
            refused_before = ready is not None and ready.reason == REASON_INVALID_JOB_TEMPLATE
            if status.observed_generation == generation and not refused_before:
                return None
            verdict = dry_run_job(self.client, cronjob, md.namespace, self.clock.now())
            self.verdicts.put(key, md.uid, generation, verdict)
        return verdict.message if verdict.valid is False else None

    def forget(self, key: str) -> None:
        self.verdicts.forget(key)

    def __len__(self) -> int:
        return len(self.verdicts)
