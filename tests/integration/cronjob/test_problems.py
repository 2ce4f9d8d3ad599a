"""Bad input and foreign objects: reported clearly, nothing lost, no hot loop."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from cronjob_controller.api import CRONJOBS
from cronjob_controller.jobs import job_name
from cronjob_controller.webhook import HANDLERS
from pyctrl import Request
from pyctrl.errors import NotFound
from pyctrl.kube import JOBS
from pyctrl.testing.envtest import ControlPlane
from pyctrl.webhook import WebhookServer, WebhookServerOptions, generate_certs
from tests.integration.cronjob.env import Env, cronjob_body, minute_floor, wait_for
from tests.threads import running

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("spec", "reason", "needle"), [
    ({"schedule": "61 * * * *"}, "InvalidSchedule", "spec.schedule"),
    ({"schedule": "0 0 * * * *"}, "InvalidSchedule", "spec.schedule"),
    ({"timeZone": "Mars/Olympus_Mons"}, "UnknownTimeZone", "spec.timeZone"),
])
def test_invalid_cronjob_reported_once_without_hot_loop(
    env: Env, spec: dict[str, Any], reason: str, needle: str
) -> None:
    schedule = spec.pop("schedule", "* * * * *")
    env.create_cronjob("bad", schedule, **spec)
    env.create_cronjob("good")
    wired = env.start()
    cond = wait_for(lambda: (c := env.condition("bad")) and c["status"] == "False" and c,
                    what="Ready=False condition")
    assert cond["reason"] == reason
    assert needle in cond["message"]
    events = wait_for(lambda: env.events(reason, "bad"), what=f"{reason} event")
    assert events[0]["type"] == "Warning" and needle in events[0]["message"]
    rv = env.cronjob("bad")["metadata"]["resourceVersion"]
    # Several minute ticks later: the valid CronJob runs on time, the invalid one was neither
    # written again nor re-reported, and its key is not spinning in the queue.
    for _ in range(3):
        due = env.next_minute()
        wait_for(env.has_job("good", job_name("good", due)), what="good run")
    assert env.cronjob("bad")["metadata"]["resourceVersion"] == rv
    assert all(e.get("count", 1) == 1 for e in env.events(reason, "bad"))
    assert wired.controller.queue.num_requeues(Request(env.namespace, "bad")) == 0
    assert env.job_names("bad") == set()
    # Fixing the spec makes it schedulable again.
    env.patch_spec("bad", schedule="* * * * *", timeZone=None)
    wait_for(lambda: (env.condition("bad") or {}).get("status") == "True", what="Ready=True")


def test_foreign_job_squatting_our_name_is_left_alone(env: Env) -> None:
    env.create_cronjob("squat")
    boundary = minute_floor(env.clock.now()) + timedelta(minutes=1)
    foreign = job_name("squat", boundary)
    env.client.create(JOBS, {"metadata": {"name": foreign, "labels": {"owner": "someone"}},
                             "spec": {"suspend": True, "template": {"spec": {
                                 "restartPolicy": "Never",
                                 "containers": [{"name": "c", "image": "x"}]}}}},
                      env.namespace)
    env.start()
    env.next_minute()
    wait_for(lambda: env.events("UnexpectedJob", "squat"), what="UnexpectedJob")
    job = env.client.get(JOBS, foreign, env.namespace)
    assert not job["metadata"].get("ownerReferences")
    assert job["metadata"]["labels"] == {"owner": "someone"}
    due = env.next_minute()
    wait_for(lambda: job_name("squat", due) in env.job_names("squat"), what="later run")


def test_deleting_cronjob_garbage_collects_its_jobs(env: Env,
                                                    control_plane: ControlPlane) -> None:
    env.create_cronjob("gc")
    env.start()
    env.next_minute()
    wait_for(lambda: env.job_names("gc"), what="a job")
    env.client.delete(CRONJOBS, "gc", env.namespace)
    wait_for(lambda: not env.job_names(), timeout=60, what="jobs garbage-collected")


def test_schedule_edit_never_starts_a_run_before_the_edit(env: Env) -> None:
    env.create_cronjob("edit", "0 0 1 1 *")  # yearly: nothing due
    env.start()
    wait_for(lambda: (env.cronjob("edit").get("status") or {}).get("observedSchedule"),
             what="observed schedule")
    # The anchor is an hour back; a new every-minute schedule must not run the missed times.
    env.seed_last_schedule("edit", minute_floor(env.clock.now()) - timedelta(hours=1))
    env.step_to(env.clock.now() + timedelta(seconds=1))
    env.patch_spec("edit", schedule="* * * * *")
    wait_for(lambda: (env.cronjob("edit")["status"].get("observedSchedule") or {})
             .get("since"), what="edit observed")  # since is set only by an edit
    assert env.job_names("edit") == set()
    due = env.next_minute()
    wait_for(lambda: env.job_names("edit") == {job_name("edit", due)}, what="first new run")


def test_webhook_rejects_bad_schedule_through_the_apiserver(
    env: Env, control_plane: ControlPlane, tmp_path: Path
) -> None:
    if control_plane.external:
        pytest.skip("registers a webhook by URL on 127.0.0.1")
    certs = generate_certs(tmp_path, ["localhost"], ["127.0.0.1"])
    server = WebhookServer(WebhookServerOptions(cert_dir=str(tmp_path), host="127.0.0.1",
                                               port=0), HANDLERS)
    name = f"pyctrl-test-{env.namespace}"
    with running(server.run, name="test-webhook"):
        try:
            assert server.ready.wait(10)
            hook = {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": name},
                "webhooks": [{
                    "name": "vcronjob.batch.pyctrl.io",
                    "admissionReviewVersions": ["v1"], "sideEffects": "None",
                    "failurePolicy": "Fail", "timeoutSeconds": 5,
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{server.port}/validate-batch-pyctrl-io-v1-cronjob",
                        "caBundle": certs.ca_bundle()},
                    "rules": [{"apiGroups": ["batch.pyctrl.io"], "apiVersions": ["v1"],
                               "operations": ["CREATE", "UPDATE"], "resources": ["cronjobs"]}],
                    # Only this test's namespace: the session's other tests run without it.
                    "namespaceSelector": {"matchLabels": {
                        "kubernetes.io/metadata.name": env.namespace}},
                }],
            }
            control_plane.kubectl("apply", "-f", "-", input=json.dumps(hook))
            bad = dict(cronjob_body("rejected", "0 0 * * * L"))
            bad["metadata"] = {"name": "rejected", "namespace": env.namespace}
            # The webhook configuration takes a moment to reach the apiserver's admission chain.
            def rejected() -> str | None:
                out = control_plane.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
                if out.returncode == 0:
                    env.client.delete(CRONJOBS, "rejected", env.namespace)
                    return None
                return out.stderr
            stderr = wait_for(rejected, what="webhook rejection")
            assert "spec.schedule" in stderr
            # The CRD schema can not parse cron; this message can only come from our webhook.
            assert "expected 5 fields" in stderr
            with pytest.raises(NotFound):
                env.cronjob("rejected")
        finally:
            control_plane.kubectl("delete", "validatingwebhookconfiguration", name,
                                  "--ignore-not-found")
