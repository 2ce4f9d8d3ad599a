"""The validating webhook refuses what validation bounds, with the controller's messages.

Through the review handler only (``validate_review``, plain dicts): the webhook calls
``api.validate``, so these pin that the messages reach the user at admission.
"""

from __future__ import annotations

from typing import Any

import pytest

from cronjob_controller.webhook import validate_review


def review(**spec: Any) -> dict[str, Any]:
    full: dict[str, Any] = {"schedule": "* * * * *", "jobTemplate": {"spec": {}}, **spec}
    obj = {"apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
           "metadata": {"name": "hello", "namespace": "ns"}, "spec": full}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "req-1", "operation": "CREATE", "object": obj}}


def response(result: dict[str, Any]) -> dict[str, Any]:
    assert result["response"]["uid"] == "req-1"
    return result["response"]  # type: ignore[no-any-return]


def denied(result: dict[str, Any]) -> dict[str, Any]:
    resp = response(result)
    assert resp["allowed"] is False
    assert resp["status"]["code"] == 422
    return resp["status"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(("spec", "cause"), [
    ("0 0 30 2 *", 'Invalid value: "0 0 30 2 *": day 30 never occurs in February, '
                   "so the schedule would never run"),
    ("0 0 31 4 *", 'Invalid value: "0 0 31 4 *": day 31 never occurs in April, '
                   "so the schedule would never run"),
    ("59 23 31 2 *", 'Invalid value: "59 23 31 2 *": day 31 never occurs in February, '
                     "so the schedule would never run"),
    ("@every 1s", 'Invalid value: "@every 1s": the interval of @every 1s must be at least '
                  "1m: Jobs are named per minute, so a run cannot start more often than "
                  "once a minute"),
])
def test_schedule_that_could_never_run_as_meant_is_denied(spec: str, cause: str) -> None:
    status = denied(validate_review(review(schedule=spec)))
    assert status["message"] == (
        f'CronJob.batch.pyctrl.io "hello" is invalid: spec.schedule: {cause}')
    assert status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": "spec.schedule", "message": cause}]


@pytest.mark.parametrize("spec", ["0 0 30 2 1", "@every 1m", "@every 90s"])
def test_satisfiable_schedule_is_allowed(spec: str) -> None:
    assert response(validate_review(review(schedule=spec)))["allowed"] is True


def test_overlong_schedule_is_denied_without_echoing_it() -> None:
    huge = ",".join(str(m % 60) for m in range(300_000)) + " * * * *"  # ~850 KB, valid
    status = denied(validate_review(review(schedule=huge)))
    assert status["details"]["causes"] == [{
        "reason": "FieldValueTooLong", "field": "spec.schedule",
        "message": "Too long: may not be more than 1024 characters"}]
    assert len(status["message"]) < 200


@pytest.mark.parametrize("zone", ["posix/Europe/Berlin", "right/UTC", "localtime",
                                  "posixrules", "Factory"])
def test_non_canonical_time_zone_is_denied(zone: str) -> None:
    status = denied(validate_review(review(timeZone=zone)))
    [cause] = status["details"]["causes"]
    assert cause["field"] == "spec.timeZone"
    assert "must be a canonical IANA time zone name" in cause["message"]


@pytest.mark.parametrize(("key", "value", "maximum"), [
    ("startingDeadlineSeconds", 1_000_000_000_000, 31_622_400),
    ("successfulJobsHistoryLimit", 1001, 1000),
    ("failedJobsHistoryLimit", 2**31 - 1, 1000),
])
def test_integers_beyond_their_maximum_are_denied(key: str, value: int, maximum: int) -> None:
    status = denied(validate_review(review(**{key: value})))
    assert status["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": f"spec.{key}",
        "message": f"Invalid value: {value}: must be less than or equal to {maximum}"}]
