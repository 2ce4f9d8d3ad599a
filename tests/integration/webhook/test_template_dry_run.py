"""The validating webhook refuses, at ``kubectl apply``, a CronJob whose template the Job API
would refuse (issue 27 item 2): it dry-runs the template's Job (``dryRun=All``) in the
CronJob's namespace and denies with the API server's message. Installed the way
test_admission.py installs the project's webhook configurations, serving
``handlers(client)``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cronjob_controller.templatecheck import DRY_RUN_TIMEOUT_SECONDS
from cronjob_controller.webhook import handlers
from pyctrl import RESTClient
from pyctrl.kube import JOBS
from pyctrl.testing.envtest import ControlPlane, LocalWebhookServer
from tests.integration.cronjob.env import break_template

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
WEBHOOK_MANIFEST = ROOT / "manifests" / "components" / "webhook" / "webhook.yaml"


def _cronjob(namespace: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "c", "image": "busybox"}]}}}}}}


@pytest.fixture
def dry_run_webhook(control_plane: ControlPlane, namespace: str,
                    tmp_path: Path) -> Iterator[ControlPlane]:
    if control_plane.external:
        pytest.skip("registers webhooks by URL on 127.0.0.1")
    client = RESTClient.from_kubeconfig(control_plane.kubeconfig_path,
                                        timeout=DRY_RUN_TIMEOUT_SECONDS, max_retries=0)
    with client, LocalWebhookServer(handlers(client), tmp_path) as server:
        installed = control_plane.install_webhooks(
            [WEBHOOK_MANIFEST], server.url_base, server.ca_pem, namespaces=[namespace],
            name_suffix=f"-{namespace}", probe=_cronjob(namespace, "probe"))
        try:
            yield control_plane
        finally:
            installed.uninstall()


@pytest.mark.parametrize(("breakage", "message"), [
    ("no-restart-policy", "spec.template.spec.restartPolicy: Required value"),
    ("empty-image", "spec.template.spec.containers[0].image: Required value"),
    ("bad-container-name", 'spec.template.spec.containers[0].name: Invalid value: "Bad_Name"'),
])
def test_kubectl_apply_of_a_template_the_job_api_refuses_is_denied(
        dry_run_webhook: ControlPlane, client: RESTClient, namespace: str, breakage: str,
        message: str) -> None:
    obj = _cronjob(namespace, "broken")
    break_template(obj, breakage)

    out = dry_run_webhook.kubectl("apply", "-f", "-", input=json.dumps(obj), check=False)

    assert out.returncode != 0
    assert 'The CronJob "broken" is invalid: spec.jobTemplate:' in out.stderr, out.stderr
    assert message in out.stderr, out.stderr
    assert client.list(JOBS, namespace)["items"] == []  # a dry run stores nothing


def test_kubectl_apply_of_a_valid_template_is_admitted(
        dry_run_webhook: ControlPlane, client: RESTClient, namespace: str) -> None:
    out = dry_run_webhook.kubectl("apply", "-f", "-",
                                  input=json.dumps(_cronjob(namespace, "fine")), check=False)

    assert out.returncode == 0, out.stderr
    assert client.list(JOBS, namespace)["items"] == []
