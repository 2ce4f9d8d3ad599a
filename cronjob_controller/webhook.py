"""Admission webhooks for CronJobs: validate and mutate, as pyctrl.webhook handlers.

Contract:

* :func:`validate` / :func:`mutate` are pure :data:`pyctrl.webhook.Handler` functions from an
  ``admission.k8s.io/v1`` AdmissionReview *request* to an :class:`AdmissionResponse`; the
  server (:class:`pyctrl.webhook.WebhookServer`) serves them at :data:`VALIDATE_PATH` and
  :data:`MUTATE_PATH` (see :data:`HANDLERS`). The review's object is read as the typed
  CronJob (:func:`cronjob_controller.api.check`: a field of the wrong type is a denial naming
  it) and validated by :func:`cronjob_controller.api.validate`; the defaults are
  :func:`cronjob_controller.api.default_patch`'s, so the webhook, the CRD defaults and the
  controller agree. A denial carries HTTP-like code 422, reason ``Invalid`` and a message
  naming each field and problem. On UPDATE, errors in fields the update did not change are
  tolerated (ratcheting), so an object stored before the webhook existed can still be
  suspended, relabelled or have its finalizers removed; objects being deleted are always
  allowed.
* :func:`validate_review` / :func:`mutate_review` are the same on whole AdmissionReviews
  (review in, review out); malformed reviews raise :class:`ReviewError` (HTTP 400).
* :func:`handlers` with a client adds what the schema can not see: after :func:`validate`
  admits a CronJob, the Job its template makes is created with ``dryRun=All`` in the
  CronJob's namespace (:mod:`cronjob_controller.templatecheck`); refused (422), the CronJob is
  denied with the API server's message under ``spec.jobTemplate``. A dry run that can not be
  made (RBAC forbidden, a timeout, no connection) admits the CronJob with a warning: the
  webhook never blocks a user on its own trouble. The client bounds the time (the CLI gives it
  a :data:`~cronjob_controller.templatecheck.DRY_RUN_TIMEOUT_SECONDS` timeout and no retries).
  On UPDATE the dry run runs only when ``spec.jobTemplate`` changed (ratcheting, as above).
  Every review answers within its deadline whatever the dry run does: the dry run runs on a
  thread of its own (at most :data:`MAX_DRY_RUNS` at once) and is waited for at most
  :data:`~cronjob_controller.templatecheck.DRY_RUN_TIMEOUT_SECONDS` and at most the time the
  server says is left to answer (:func:`pyctrl.webhook.remaining`, less a margin); one not
  answered by then, or not started for lack of time or of a thread, admits with the
  warning above (a late answer is dropped).
  :data:`HANDLERS` is the pure pair, without a dry run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import cast

from cronjob_controller.api import CRONJOBS, KIND, FieldError, check, default_patch, parse
from cronjob_controller.templatecheck import DRY_RUN_TIMEOUT_SECONDS, Verdict, dry_run_job
from pyctrl import Clock, Manager, RealClock
from pyctrl import webhook as serving
from pyctrl.kube import Client
from pyctrl.webhook import (
    Admission,
    AdmissionResponse,
    Handler,
    ReviewError,
    allowed,
    denied,
    handle_review,
    patched,
    remaining,
)

__all__ = [
    "ADMISSION",
    "HANDLERS",
    "MAX_DRY_RUNS",
    "MUTATE_PATH",
    "VALIDATE_PATH",
    "ReviewError",
    "handlers",
    "mutate",
    "mutate_review",
    "server",
    "setup",
    "validate",
    "validate_review",
]

# Dry runs under way at once (each on a thread, bounded by the client's timeout); past it a
# review admits without one rather than wait.
MAX_DRY_RUNS = 32
_DRY_RUN_MARGIN = 0.05  # seconds kept after a dry run's wait to build the answer

VALIDATE_PATH = "/validate-batch-pyctrl-io-v1-cronjob"
MUTATE_PATH = "/mutate-batch-pyctrl-io-v1-cronjob"
# How the API server calls them (python -m pyctrl gen webhook writes the configurations).
# failurePolicy Fail: an unvalidated CronJob would only be caught later by the controller,
# which then reports it through an event and a condition; both replicas serve the webhook.
ADMISSION: dict[str, Admission] = {
    MUTATE_PATH: Admission("mutating", CRONJOBS, name="mcronjob.batch.pyctrl.io",
                           timeout_seconds=5),
    VALIDATE_PATH: Admission("validating", CRONJOBS, name="vcronjob.batch.pyctrl.io",
                             timeout_seconds=5),
}


def _value_at(obj: object, path: str) -> object:
    for part in path.split("."):
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(part)
    return obj


def _object(request: Mapping[str, object], key: str) -> Mapping[str, object] | None:
    obj = request.get(key)
    return cast(Mapping[str, object], obj) if isinstance(obj, Mapping) else None


def validate(request: Mapping[str, object]) -> AdmissionResponse:
    """The validating webhook's decision on an AdmissionReview request."""
    obj = _object(request, "object")
    if request.get("operation") not in ("CREATE", "UPDATE") or obj is None:
        return allowed()
    if _value_at(obj, "metadata.deletionTimestamp"):
        return allowed()
    errors = check(obj)
    old = _object(request, "oldObject")
    if request.get("operation") == "UPDATE" and old is not None:
        errors = [e for e in errors if _value_at(obj, e.field) != _value_at(old, e.field)]
    if not errors:
        return allowed()
    name = str(_value_at(obj, "metadata.name") or _value_at(obj, "metadata.generateName") or "")
    return _invalid(name, errors)


def _invalid(name: str, errors: Sequence[FieldError]) -> AdmissionResponse:
    listed = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(map(str, errors)) + "]"
    return denied(
        f'{KIND}.batch.pyctrl.io "{name}" is invalid: {listed}', code=422, reason="Invalid",
        details={
            "name": name, "group": "batch.pyctrl.io", "kind": KIND,
            "causes": [{"reason": e.type.reason, "message": e.body, "field": e.field}
                       for e in errors],
        })


def mutate(request: Mapping[str, object]) -> AdmissionResponse:
    """The mutating webhook's decision: a JSON Patch adding the CRD defaults, if any."""
    obj = _object(request, "object")
    if request.get("operation") not in ("CREATE", "UPDATE") or obj is None:
        return allowed()
    return patched(default_patch(obj))


def _template_refused(name: str, message: str) -> AdmissionResponse:
    detail = f"the Job it makes is refused by the API server: {message}"
    return denied(
        f'{KIND}.batch.pyctrl.io "{name}" is invalid: spec.jobTemplate: {detail}', code=422,
        reason="Invalid", details={
            "name": name, "group": "batch.pyctrl.io", "kind": KIND,
            "causes": [{"reason": "FieldValueInvalid", "message": detail,
                        "field": "spec.jobTemplate"}]})


class _DryRuns:
    """Dry runs on threads of their own, waited for within the review's deadline."""

    def __init__(self) -> None:
        self._slots = threading.BoundedSemaphore(MAX_DRY_RUNS)

    def run(self, ask: Callable[[], Verdict]) -> Verdict:
        left = remaining()
        budget = DRY_RUN_TIMEOUT_SECONDS if left is None else min(
            DRY_RUN_TIMEOUT_SECONDS, left - _DRY_RUN_MARGIN)
        if budget <= 0:
            return Verdict(None, "no time left before the review's deadline")
        if not self._slots.acquire(blocking=False):
            return Verdict(None, f"{MAX_DRY_RUNS} dry runs already under way")
        done = threading.Event()
        answer: list[Verdict] = []

        def work() -> None:
            try:
                answer.append(ask())
            except Exception as err:  # a bug or a transport failure: admit, as documented
                answer.append(Verdict(None, f"{type(err).__name__}: {err}"))
            finally:
                self._slots.release()
                done.set()

        threading.Thread(target=work, name="webhook-dry-run", daemon=True).start()
        if not done.wait(budget):
            return Verdict(None, f"no answer within {budget:.1f}s")
        return answer[0]


def validate_with_dry_run(client: Client, clock: Clock | None = None) -> Handler:
    """:func:`validate`, then a dry-run create of the template's Job (module docstring)."""
    now = (clock or RealClock()).now
    runs = _DryRuns()

    def handle(request: Mapping[str, object]) -> AdmissionResponse:
        response = validate(request)
        obj = _object(request, "object")
        if not response.allowed or obj is None or request.get("operation") not in (
                "CREATE", "UPDATE") or _value_at(obj, "metadata.deletionTimestamp"):
            return response
        old = _object(request, "oldObject")
        if (request.get("operation") == "UPDATE" and old is not None
                and _value_at(obj, "spec.jobTemplate") == _value_at(old, "spec.jobTemplate")):
            return response
        cronjob, _ = parse(obj)
        if cronjob is None:  # a type error tolerated on UPDATE (ratcheting): nothing to run
            return response
        namespace = str(request.get("namespace") or cronjob.metadata.namespace)
        verdict = runs.run(lambda: dry_run_job(client, cronjob, namespace, now()))
        if verdict.valid is False:
            name = str(_value_at(obj, "metadata.name")
                       or _value_at(obj, "metadata.generateName") or "")
            return _template_refused(name, verdict.message)
        if verdict.valid is None:
            return allowed(*response.warnings, "spec.jobTemplate was not checked against the "
                           f"Job API (dry run not possible: {verdict.message}); a Job the "
                           "API server refuses shows as Ready=False InvalidJobTemplate")
        return response

    return handle


def handlers(client: Client | None = None, clock: Clock | None = None) -> dict[str, Handler]:
    """The webhook's handlers by path; with ``client``, validation includes the dry run."""
    validator = validate if client is None else validate_with_dry_run(client, clock)
    return {VALIDATE_PATH: validator, MUTATE_PATH: mutate}


HANDLERS: dict[str, Handler] = handlers()


def validate_review(review: Mapping[str, object]) -> dict[str, object]:
    """:func:`validate` on a whole AdmissionReview (raises :class:`ReviewError`)."""
    return handle_review(validate, review)


def mutate_review(review: Mapping[str, object]) -> dict[str, object]:
    """:func:`mutate` on a whole AdmissionReview (raises :class:`ReviewError`)."""
    return handle_review(mutate, review)


def server(config: serving.WebhookServerOptions,
           served: Mapping[str, Handler]) -> serving.WebhookServer:
    """The webhook server for ``served`` (from :func:`handlers`), each with its Admission
    (the server itself lives in :mod:`pyctrl.webhook`)."""
    return serving.WebhookServer(config, served, admission=ADMISSION)


def setup(manager: Manager) -> None:
    """The webhook as deployed, on ``manager`` (``python -m pyctrl gen webhook`` reads it)."""
    manager.add(server(serving.WebhookServerOptions(cert_dir="/tmp/k8s-webhook-server/serving-certs"),
                       HANDLERS))
