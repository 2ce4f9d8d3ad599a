"""The validating webhook dry-runs the template's Job (issue 27 item 2), with a FakeClient.

Refused by the API server (422): denied, with the server's message under spec.jobTemplate.
Not possible (forbidden, timeout): admitted with a warning. Unchanged template on UPDATE:
not asked again (ratcheting).
"""

from __future__ import annotations

from typing import Any

from cronjob_controller.webhook import VALIDATE_PATH, handlers
from pyctrl.errors import ApiError, Forbidden, Invalid, Timeout
from pyctrl.kube import JOBS
from pyctrl.testing import Action, FakeClient

REFUSAL = ('Job.batch "hello-x1y2z" is invalid: spec.template.spec.containers[0].image: '
           'Required value')


def cronjob(image: str = "busybox") -> dict[str, Any]:
    return {"apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
            "metadata": {"name": "hello", "namespace": "ns"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": image}]}}}}}}


def request(obj: dict[str, Any], operation: str = "CREATE",
            old: dict[str, Any] | None = None) -> dict[str, object]:
    req: dict[str, object] = {"uid": "r", "operation": operation, "namespace": "ns",
                              "object": obj}
    if old is not None:
        req["oldObject"] = old
    return req


def answering(err: ApiError | None) -> tuple[FakeClient, list[Action]]:
    client = FakeClient()
    asked: list[Action] = []

    def react(action: Action) -> None:
        asked.append(action)
        if err is not None:
            raise err

    client.prepend_reactor("create", JOBS, react)
    return client, asked


def test_template_the_job_api_refuses_is_denied_with_the_servers_message() -> None:
    client, asked = answering(Invalid(REFUSAL, 422, "Invalid"))
    validate = handlers(client)[VALIDATE_PATH]

    resp = validate(request(cronjob(image="")))

    assert resp.allowed is False and resp.status is not None
    assert resp.status["code"] == 422
    assert resp.status["message"] == (
        'CronJob.batch.pyctrl.io "hello" is invalid: spec.jobTemplate: the Job it makes is '
        f"refused by the API server: {REFUSAL}")
    assert [(a.namespace, a.options) for a in asked] == [("ns", {"dry_run": True})]
    assert asked[0].object["metadata"]["generateName"] == "hello-"


def test_template_the_job_api_accepts_is_allowed_and_nothing_is_stored() -> None:
    client, asked = answering(None)

    resp = handlers(client)[VALIDATE_PATH](request(cronjob()))

    assert resp.allowed is True and list(resp.warnings) == []
    assert len(asked) == 1 and client.list_objects(JOBS) == []


def test_dry_run_that_cannot_be_made_allows_with_a_warning() -> None:
    for err in (Forbidden("jobs.batch is forbidden", 403, "Forbidden"),
                Timeout("timed out after 2 s", 0, "Timeout")):
        client, _ = answering(err)

        resp = handlers(client)[VALIDATE_PATH](request(cronjob()))

        assert resp.allowed is True
        assert len(resp.warnings) == 1 and "not checked" in resp.warnings[0]
        assert err.message in resp.warnings[0]


def test_update_that_keeps_the_template_is_not_asked_again() -> None:
    client, asked = answering(Invalid(REFUSAL, 422, "Invalid"))
    old = cronjob(image="")
    new = cronjob(image="")
    new["spec"]["suspend"] = True  # suspending a CronJob stored before the webhook

    resp = handlers(client)[VALIDATE_PATH](request(new, "UPDATE", old))

    assert resp.allowed is True and asked == []


def test_schema_errors_are_reported_without_a_dry_run() -> None:
    client, asked = answering(None)
    bad = cronjob()
    bad["spec"]["schedule"] = "61 * * * *"

    resp = handlers(client)[VALIDATE_PATH](request(bad))

    assert resp.allowed is False and asked == []


def test_handlers_without_a_client_do_no_dry_run() -> None:
    resp = handlers()[VALIDATE_PATH](request(cronjob(image="")))
    assert resp.allowed is True
