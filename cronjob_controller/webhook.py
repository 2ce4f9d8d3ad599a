"""Admission webhooks for CronJobs: validate and mutate, as pyctrl.webhook handlers.

Contract:

* :func:`validate` / :func:`mutate` are pure :data:`pyctrl.webhook.Handler` functions from an
  ``admission.k8s.io/v1`` AdmissionReview *request* to an :class:`AdmissionResponse`; the
  server (:class:`pyctrl.webhook.WebhookServer`) serves them at :data:`VALIDATE_PATH` and
  :data:`MUTATE_PATH` (see :data:`HANDLERS`). They use :func:`cronjob_controller.api.validate`
  and :func:`cronjob_controller.api.default_patch`, so the webhook, the CRD defaults and the
  controller agree. A denial carries HTTP-like code 422, reason ``Invalid`` and a message
  naming each field and problem. On UPDATE, errors in fields the update did not change are
  tolerated (ratcheting), so an object stored before the webhook existed can still be
  suspended, relabelled or have its finalizers removed; objects being deleted are always
  allowed.
* :func:`validate_review` / :func:`mutate_review` are the same on whole AdmissionReviews
  (review in, review out); malformed reviews raise :class:`ReviewError` (HTTP 400).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from cronjob_controller.api import KIND, FieldError, default_patch
from cronjob_controller.api import validate as validate_object
from pyctrl.webhook import (
    AdmissionResponse,
    Handler,
    ReviewError,
    allowed,
    denied,
    handle_review,
    patched,
)

__all__ = [
    "HANDLERS",
    "MUTATE_PATH",
    "VALIDATE_PATH",
    "ReviewError",
    "mutate",
    "mutate_review",
    "validate",
    "validate_review",
]

VALIDATE_PATH = "/validate-batch-pyctrl-io-v1-cronjob"
MUTATE_PATH = "/mutate-batch-pyctrl-io-v1-cronjob"


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
    errors = validate_object(obj)
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


HANDLERS: dict[str, Handler] = {VALIDATE_PATH: validate, MUTATE_PATH: mutate}


def validate_review(review: Mapping[str, object]) -> dict[str, object]:
    """:func:`validate` on a whole AdmissionReview (raises :class:`ReviewError`)."""
    return handle_review(validate, review)


def mutate_review(review: Mapping[str, object]) -> dict[str, object]:
    """:func:`mutate` on a whole AdmissionReview (raises :class:`ReviewError`)."""
    return handle_review(mutate, review)
