"""Without the webhook, a template the Job API refuses shows Ready=False InvalidJobTemplate
within seconds of its creation, not at its first due time (issue 27 item 2), on the real API
server: the controller dry-runs the template's Job once per spec generation. ``kubectl get
pcj`` shows it in the READY and REASON columns."""

from __future__ import annotations

from typing import Any

import pytest

from cronjob_controller.api import CRONJOBS
from pyctrl.testing.envtest import ControlPlane
from tests.integration.cronjob.env import Env, break_template, cronjob_body, wait_for

pytestmark = pytest.mark.integration


def _pod_spec(body: dict[str, Any]) -> dict[str, Any]:
    return body["spec"]["jobTemplate"]["spec"]["template"]["spec"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(("breakage", "needle"), [
    ("no-restart-policy", "spec.template.spec.restartPolicy"),
    ("empty-image", "spec.template.spec.containers[0].image"),
    ("bad-container-name", "spec.template.spec.containers[0].name"),
])
def test_refused_template_is_not_ready_within_seconds(env: Env, control_plane: ControlPlane,
                                                      breakage: str, needle: str) -> None:
    body = cronjob_body("broken", "@daily")  # not due for hours
    break_template(body, breakage)
    pod = _pod_spec(body)
    env.client.create(CRONJOBS, body, env.namespace)
    env.start()

    ready = wait_for(lambda: (c := env.condition("broken")) and c["status"] == "False" and c,
                     timeout=10, what="Ready=False")
    assert ready["reason"] == "InvalidJobTemplate"
    assert needle in ready["message"]
    events = wait_for(lambda: env.events("InvalidJobTemplate", "broken"), what="the event")
    assert events[0]["type"] == "Warning" and needle in events[0]["message"]
    assert env.job_names("broken") == set()
    # kubectl get pcj: the READY and REASON printer columns.
    out = control_plane.kubectl("get", "pcj", "broken", "-n", env.namespace).stdout
    header, row = out.splitlines()
    assert header.split()[-3:] == ["READY", "REASON", "AGE"], out
    assert row.split()[-3:-1] == ["False", "InvalidJobTemplate"], out

    # Fixed: ready again (the new generation is checked again).
    pod["containers"][0].update(name="c", image="busybox")
    pod["restartPolicy"] = "Never"
    env.patch_spec("broken", jobTemplate=body["spec"]["jobTemplate"])
    wait_for(lambda: (env.condition("broken") or {}).get("status") == "True",
             what="Ready=True after the fix")
