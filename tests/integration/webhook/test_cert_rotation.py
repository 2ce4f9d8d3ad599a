"""Issue 12 item 5 against a real kube-apiserver: the CA and the serving certificate rotate
under a running webhook server that the apiserver calls (failurePolicy Fail), and the
apiserver's calls succeed again without restarting the server.

The webhook is registered by URL on 127.0.0.1 with the CA as ``caBundle`` and a
namespaceSelector for the test's namespace only (the session's other tests run without it).
Rotation is what cert-manager's self-signed issuer does: a new CA (the webhook configuration's
caBundle is updated by the CA injector) and a new serving certificate written into the
mounted directory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cronjob_controller.webhook import HANDLERS, VALIDATE_PATH
from pyctrl.testing.envtest import ControlPlane
from pyctrl.testing.envtest.webhooks import install_serving_cert
from pyctrl.webhook import CertificatePaths, WebhookServer, WebhookServerOptions, generate_certs
from tests.threads import running
from tests.waiting import poll

pytestmark = pytest.mark.integration

WEBHOOK_MESSAGE = "expected 5 fields"  # only our webhook parses cron; the CRD schema can not


def _cronjob(namespace: str, name: str, schedule: str) -> str:
    return json.dumps({"apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
                       "metadata": {"name": name, "namespace": namespace},
                       "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {
                           "spec": {"restartPolicy": "OnFailure", "containers": [
                               {"name": "c", "image": "busybox"}]}}}}}})


class Hook:
    """The ValidatingWebhookConfiguration for this test, by URL."""

    def __init__(self, control_plane: ControlPlane, namespace: str, port: int) -> None:
        self.cp = control_plane
        self.namespace = namespace
        self.name = f"pyctrl-rotation-{namespace}"
        self.url = f"https://127.0.0.1:{port}{VALIDATE_PATH}"

    def apply(self, ca: CertificatePaths) -> None:
        self.cp.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": self.name},
            "webhooks": [{
                "name": "vcronjob.batch.pyctrl.io",
                "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "failurePolicy": "Fail", "timeoutSeconds": 5,
                "clientConfig": {"url": self.url, "caBundle": ca.ca_bundle()},
                "rules": [{"apiGroups": ["batch.pyctrl.io"], "apiVersions": ["v1"],
                           "operations": ["CREATE", "UPDATE"], "resources": ["cronjobs"]}],
                "namespaceSelector": {"matchLabels": {
                    "kubernetes.io/metadata.name": self.namespace}},
            }],
        }))

    def delete(self) -> None:
        self.cp.kubectl("delete", "validatingwebhookconfiguration", self.name,
                        "--ignore-not-found", check=False)

    def create(self, name: str, schedule: str) -> tuple[bool, str]:
        """Create a CronJob through the apiserver (and delete it again if admitted)."""
        out = self.cp.kubectl("create", "-f", "-", input=_cronjob(self.namespace, name,
                                                                  schedule), check=False)
        if out.returncode == 0:
            self.cp.kubectl("delete", "cronjobs.batch.pyctrl.io", name, "-n", self.namespace,
                            "--wait=false", check=False)
            return True, out.stdout
        return False, out.stderr

    def denied_by_webhook(self) -> str | None:
        admitted, text = self.create("rejected", "0 0 * * * L")
        return text if not admitted and WEBHOOK_MESSAGE in text else None

    def accepted(self) -> bool:
        return self.create("valid", "*/5 * * * *")[0]

    def call_fails(self) -> str | None:
        admitted, text = self.create("valid", "*/5 * * * *")
        return text if not admitted and "failed calling webhook" in text else None


@pytest.fixture
def server(tmp_path: Path) -> Iterator[WebhookServer]:
    cert_dir = tmp_path / "serving-certs"
    install_serving_cert(generate_certs(tmp_path / "first", ["localhost"], ["127.0.0.1"]), cert_dir)
    srv = WebhookServer(WebhookServerOptions(cert_dir=str(cert_dir), host="127.0.0.1", port=0,
                                            cert_poll_seconds=0.2), HANDLERS)
    with running(srv.run, name="test-webhook"):
        assert srv.ready.wait(10)
        yield srv


def test_apiserver_calls_succeed_after_ca_and_serving_cert_rotation(
        control_plane: ControlPlane, namespace: str, server: WebhookServer,
        tmp_path: Path) -> None:
    if control_plane.external:
        pytest.skip("registers a webhook by URL on 127.0.0.1")
    first = CertificatePaths(tmp_path / "first" / "ca.crt", tmp_path / "first" / "tls.crt",
                             tmp_path / "first" / "tls.key")
    hook = Hook(control_plane, namespace, server.port)
    try:
        hook.apply(first)
        # The configuration takes a moment to reach the apiserver's admission chain.
        assert poll(hook.denied_by_webhook, timeout=30, interval=0.2), "webhook never called"
        assert hook.accepted()

        # Rotation: a new CA, injected into the configuration's caBundle...
        second = generate_certs(tmp_path / "second", ["localhost"], ["127.0.0.1"])
        hook.apply(second)
        # ...so the apiserver no longer trusts the certificate the server presents.
        failure = poll(hook.call_fails, timeout=30, interval=0.2)
        assert failure and "x509" in failure, failure
        # ...then the new serving certificate lands in the mounted directory.
        install_serving_cert(second, server.config.cert_file.parent)
        assert poll(lambda: server.certs.reloads >= 1, timeout=10), "no reload"

        # No restart: the apiserver's calls succeed again.
        text = poll(hook.denied_by_webhook, timeout=30, interval=0.2)
        assert text and "spec.schedule" in text
        assert poll(hook.accepted, timeout=30, interval=0.2)
        assert server.check() is None
    finally:
        hook.delete()
