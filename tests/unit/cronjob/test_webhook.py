"""webhook.py: AdmissionReview logic with plain dicts (the server: tests/unit/webhook)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from cronjob_controller import webhook
from cronjob_controller.webhook import (
    MUTATE_PATH,
    VALIDATE_PATH,
    ReviewError,
    mutate_review,
    validate_review,
)


def cronjob(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"schedule": "* * * * *", "jobTemplate": {"spec": {}}}
    base.update(spec)
    return {"apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
            "metadata": {"name": "hello", "namespace": "ns"}, "spec": base}


def review(obj: dict[str, Any] | None, operation: str = "CREATE",
           old: dict[str, Any] | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {"uid": "req-1", "operation": operation, "object": obj}
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def response(result: dict[str, Any]) -> dict[str, Any]:
    assert result["apiVersion"] == "admission.k8s.io/v1"
    assert result["kind"] == "AdmissionReview"
    assert result["response"]["uid"] == "req-1"
    return result["response"]  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------
# Review logic


def test_valid_cronjob_is_allowed() -> None:
    assert response(validate_review(review(cronjob()))) == {"uid": "req-1", "allowed": True}


def test_invalid_schedule_is_denied_naming_field_and_problem() -> None:
    resp = response(validate_review(review(cronjob(schedule="61 * * * *"))))
    assert resp["allowed"] is False
    status = resp["status"]
    assert (status["code"], status["reason"], status["status"]) == (422, "Invalid", "Failure")
    assert status["message"] == (
        'CronJob.batch.pyctrl.io "hello" is invalid: spec.schedule: Invalid value: '
        '"61 * * * *": minute field "61": 61 is above the maximum 59')
    assert status["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.schedule",
        "message": 'Invalid value: "61 * * * *": minute field "61": 61 is above the maximum 59'}]


def test_several_errors_are_listed() -> None:
    resp = response(validate_review(review(cronjob(schedule="@daily", timeZone="Local",
                                                   concurrencyPolicy="Never"))))
    message = resp["status"]["message"]
    assert "[spec.timeZone: Invalid value: \"Local\"" in message
    assert 'spec.concurrencyPolicy: Unsupported value: "Never"' in message
    assert len(resp["status"]["details"]["causes"]) == 2


def test_a_field_of_the_wrong_type_is_denied_naming_it() -> None:
    resp = response(validate_review(review(cronjob(suspend="yes", timeZone="Local"))))
    assert resp["allowed"] is False
    assert resp["status"]["message"] == (
        'CronJob.batch.pyctrl.io "hello" is invalid: [spec.timeZone: Invalid value: "Local": '
        "must be an explicit IANA time zone name; Local (the controller's zone) is not allowed, "
        'spec.suspend: Invalid value: "yes": must be a boolean]')
    assert resp["status"]["details"]["causes"][1] == {
        "reason": "FieldValueInvalid", "field": "spec.suspend",
        "message": 'Invalid value: "yes": must be a boolean'}
    resp = response(validate_review(review({**cronjob(), "spec": {"jobTemplate": {}}})))
    assert resp["status"]["details"]["causes"] == [{
        "reason": "FieldValueRequired", "field": "spec.schedule", "message": "Required value"}]


def test_name_too_long_is_denied() -> None:
    obj = cronjob()
    obj["metadata"]["name"] = "x" * 53
    resp = response(validate_review(review(obj)))
    assert resp["allowed"] is False
    assert "metadata.name" in resp["status"]["message"]


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
def test_other_operations_are_allowed(operation: str) -> None:
    assert response(validate_review(review(None, operation)))["allowed"] is True


def test_object_being_deleted_is_allowed() -> None:
    obj = cronjob(schedule="bad")
    obj["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert response(validate_review(review(obj, "UPDATE", cronjob(schedule="bad"))))["allowed"]


def test_update_tolerates_unchanged_invalid_fields() -> None:
    old = cronjob(schedule="0 0 L * *")
    new = cronjob(schedule="0 0 L * *", suspend=True)
    assert response(validate_review(review(new, "UPDATE", old)))["allowed"] is True


def test_update_rejects_changed_invalid_fields() -> None:
    old = cronjob(schedule="0 0 L * *")
    resp = response(validate_review(review(cronjob(schedule="0 0 W * *"), "UPDATE", old)))
    assert resp["allowed"] is False
    resp = response(validate_review(review(cronjob(schedule="61 * * * *"), "UPDATE", cronjob())))
    assert resp["allowed"] is False


def test_mutate_patches_in_the_defaults() -> None:
    resp = response(mutate_review(review(cronjob(suspend=True))))
    assert resp["allowed"] is True
    assert resp["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(resp["patch"])) == [
        {"op": "add", "path": "/spec/concurrencyPolicy", "value": "Allow"},
        {"op": "add", "path": "/spec/successfulJobsHistoryLimit", "value": 3},
        {"op": "add", "path": "/spec/failedJobsHistoryLimit", "value": 1},
    ]


def test_mutate_without_anything_to_default_has_no_patch() -> None:
    obj = cronjob(concurrencyPolicy="Forbid", suspend=False, successfulJobsHistoryLimit=1,
                  failedJobsHistoryLimit=1)
    assert response(mutate_review(review(obj))) == {"uid": "req-1", "allowed": True}
    assert response(mutate_review(review(None, "DELETE"))) == {"uid": "req-1", "allowed": True}


@pytest.mark.parametrize("bad", [
    {},
    {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "x"}},
    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"op": 1}},
])
def test_malformed_reviews_raise(bad: dict[str, Any]) -> None:
    with pytest.raises(ReviewError):
        validate_review(bad)
    with pytest.raises(ReviewError):
        mutate_review(bad)


def test_handlers_are_served_at_their_paths() -> None:
    assert {VALIDATE_PATH: webhook.validate, MUTATE_PATH: webhook.mutate} == webhook.HANDLERS
    request = review(cronjob(schedule="61 * * * *"))["request"]
    assert webhook.validate(request).allowed is False
    assert webhook.mutate(review(cronjob())["request"]).patch


def test_module_exports() -> None:
    assert {"validate", "mutate", "validate_review", "mutate_review", "VALIDATE_PATH",
            "MUTATE_PATH"} <= set(webhook.__all__)
    assert not hasattr(webhook, "WebhookServer"), "the server lives in pyctrl.webhook"
