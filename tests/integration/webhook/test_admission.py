"""Issue 13 item 2: the project's webhook configurations (manifests/components/webhook) run
through a real kube-apiserver, installed by envtest the way controller-runtime's
WebhookInstallOptions does: clientConfig rewritten to a URL on a local
:class:`~pyctrl.testing.envtest.LocalWebhookServer` serving ``cronjob_controller.webhook``'s
handlers, the test CA as caBundle, scoped to the test's namespace (the session's other tests
share this apiserver and never meet these webhooks), and ready only once the apiserver has
called both.

What the tests show, always through ``kubectl apply``:

* invalid schedules the CRD schema cannot judge are denied with the webhook's message;
* defaulting: the apiserver applies the CRD's schema defaults while decoding a request,
  *before* mutating admission, and every default ``cronjob_controller.api.default_patch``
  adds is also a schema default. So on our CronJobs the mutating webhook is called, sees the
  defaults already there and patches nothing (asserted as such), and its patch is shown to
  be applied on a stand-in kind whose schema has no defaults;
* failurePolicy Fail: with the server stopped CronJob writes are refused ("failed calling
  webhook"), other namespaces are unaffected, and writes work again once it is back;
* after a CA and serving-certificate rotation, writes work again without a restart.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cronjob_controller.api import DEFAULTS
from cronjob_controller.webhook import HANDLERS, MUTATE_PATH, validate
from pyctrl.testing.envtest import (
    ControlPlane,
    InstalledWebhooks,
    LocalWebhookServer,
    WebhookInstallError,
    load_manifests,
)
from pyctrl.testing.envtest.webhooks import install_serving_cert
from pyctrl.webhook import AdmissionResponse, Handler
from tests.waiting import poll

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
WEBHOOK_MANIFEST = ROOT / "manifests" / "components" / "webhook" / "webhook.yaml"
VALID = "*/5 * * * *"
CRONJOBS = "cronjobs.batch.pyctrl.io"
STANDIN_GROUP = "admissiontest.pyctrl.io"


def _cronjob(namespace: str, name: str, schedule: str = VALID,
             api_version: str = "batch.pyctrl.io/v1", kind: str = "CronJob") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "c", "image": "busybox"}]}}}}}}


@dataclass
class Recorder:
    """The CronJob handlers, recording what the apiserver sent and what they answered."""

    calls: list[tuple[str, Mapping[str, object], AdmissionResponse]] = field(
        default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handlers(self) -> dict[str, Handler]:
        return {path: self._wrap(path, handler) for path, handler in HANDLERS.items()}

    def _wrap(self, path: str, handler: Handler) -> Handler:
        def recorded(request: Mapping[str, object]) -> AdmissionResponse:
            response = handler(request)
            with self.lock:
                self.calls.append((path, request, response))
            return response
        return recorded

    def mutations_of(self, name: str) -> list[tuple[Mapping[str, object], AdmissionResponse]]:
        with self.lock:
            return [(req, resp) for path, req, resp in self.calls
                    if path == MUTATE_PATH and _name(req.get("object")) == name]


def _name(obj: object) -> object:
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    return metadata.get("name") if isinstance(metadata, Mapping) else None


@dataclass
class Admission:
    """The project's webhooks installed for one namespace, and the server behind them."""

    cp: ControlPlane
    namespace: str
    server: LocalWebhookServer
    installed: InstalledWebhooks
    recorder: Recorder

    def apply(self, obj: Mapping[str, Any]) -> tuple[bool, str]:
        out = self.cp.kubectl("apply", "-f", "-", input=json.dumps(obj), check=False)
        return out.returncode == 0, out.stdout + out.stderr

    def get(self, name: str, resource: str = CRONJOBS,
            namespace: str | None = None) -> dict[str, Any] | None:
        out = self.cp.kubectl("get", resource, name, "-n", namespace or self.namespace,
                              "-o", "json", check=False)
        return json.loads(out.stdout) if out.returncode == 0 else None

    def reinstall(self, ca_pem: bytes) -> None:
        """Put a new CA into both configurations' caBundle (what cert-manager's injector
        does); no probe: with a new CA the calls may fail until the server has its cert."""
        self.cp.install_webhooks([WEBHOOK_MANIFEST], self.server.url_base, ca_pem,
                                 namespaces=[self.namespace],
                                 name_suffix=f"-{self.namespace}")


@pytest.fixture
def admission(control_plane: ControlPlane, namespace: str, tmp_path: Path
              ) -> Iterator[Admission]:
    if control_plane.external:
        pytest.skip("registers webhooks by URL on 127.0.0.1")
    recorder = Recorder()
    with LocalWebhookServer(recorder.handlers(), tmp_path) as server:
        installed = control_plane.install_webhooks(
            [WEBHOOK_MANIFEST], server.url_base, server.ca_pem, namespaces=[namespace],
            name_suffix=f"-{namespace}", probe=_cronjob(namespace, "probe"))
        try:
            yield Admission(control_plane, namespace, server, installed, recorder)
        finally:
            installed.uninstall()


@pytest.fixture
def other_namespace(control_plane: ControlPlane) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:10]}"
    control_plane.kubectl("create", "namespace", name)
    yield name
    control_plane.kubectl("delete", "namespace", name, "--wait=false", check=False)


def _denial(schedule: str, name: str) -> tuple[str, str]:
    """What the validating handler says about this CronJob: the apiserver's message, and
    kubectl's rendering of it (for reason Invalid kubectl prints the causes, not the
    message: ``The CronJob "<name>" is invalid: <field>: <message>``)."""
    response = validate({"operation": "CREATE", "object": _cronjob("ns", name, schedule)})
    assert response.status is not None and not response.allowed
    details = response.status["details"]
    assert isinstance(details, Mapping)
    (cause,) = details["causes"]
    return (f'admission webhook "vcronjob.batch.pyctrl.io" denied the request: '
            f'{response.status["message"]}',
            f'The CronJob "{name}" is invalid: {cause["field"]}: {cause["message"]}')


def test_install_gives_up_and_cleans_up_when_the_apiserver_gets_no_answer(
        control_plane: ControlPlane, namespace: str, tmp_path: Path) -> None:
    if control_plane.external:
        pytest.skip("registers webhooks by URL on 127.0.0.1")
    suffix = f"-{namespace}"
    with LocalWebhookServer(HANDLERS, tmp_path) as server:
        untrusted = server.rotate().ca_file.read_bytes()  # not the CA of the served cert
        with pytest.raises(WebhookInstallError, match="never got an answer") as failed:
            control_plane.install_webhooks(
                [WEBHOOK_MANIFEST], server.url_base, untrusted, namespaces=[namespace],
                name_suffix=suffix, probe=_cronjob(namespace, "probe"), timeout=3)
    assert "x509" in str(failed.value), failed.value
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        out = control_plane.kubectl("get", kind, f"pyctrl-cronjob-controller{suffix}",
                                    check=False)
        assert out.returncode != 0 and "NotFound" in out.stderr, out


@pytest.mark.parametrize("schedule", ["0 0 30 2 *", "@every 10s"])
def test_kubectl_apply_of_an_invalid_schedule_is_denied_with_the_webhook_message(
        admission: Admission, schedule: str) -> None:
    obj = _cronjob(admission.namespace, "invalid", schedule)
    message, rendered = _denial(schedule, "invalid")
    admitted, output = admission.apply(obj)
    assert not admitted
    assert rendered in output, output
    assert admission.get("invalid") is None
    # The same request as the apiserver answers it: the denial is the webhook's.
    status, body = admission.cp.http.request(
        "POST", f"/apis/batch.pyctrl.io/v1/namespaces/{admission.namespace}/cronjobs", obj)
    assert status == 422 and body["message"] == message, body


def test_the_apiserver_reuses_its_connections_to_the_webhook(admission: Admission) -> None:
    # Go's client keeps its connections alive and the server keeps them: each create
    # calls both webhooks, yet a few TLS connections carry all the calls.
    server = admission.server.server
    assert server is not None
    accepted, calls = server.accepted, len(admission.recorder.calls)
    for i in range(10):
        status, body = admission.cp.http.request(
            "POST", f"/apis/batch.pyctrl.io/v1/namespaces/{admission.namespace}/cronjobs",
            _cronjob(admission.namespace, f"reuse-{i}"))
        assert status == 201, body
    made = len(admission.recorder.calls) - calls
    assert made >= 20
    assert server.accepted - accepted <= 4, (server.accepted - accepted, made)


def test_webhooks_are_scoped_to_the_test_namespace(
        admission: Admission, other_namespace: str) -> None:
    # The CRD schema cannot parse cron: without the webhook the same CronJob is stored,
    # so the denial above is the webhook's, and other tests' namespaces never see it.
    admitted, output = admission.apply(_cronjob(other_namespace, "invalid", "0 0 30 2 *"))
    assert admitted, output
    assert admission.get("invalid", namespace=other_namespace) is not None
    assert admission.recorder.mutations_of("invalid") == []


def test_mutating_webhook_sees_the_schema_defaults_already_applied_and_patches_nothing(
        admission: Admission) -> None:
    admitted, output = admission.apply(_cronjob(admission.namespace, "defaults"))
    assert admitted, output
    stored = admission.get("defaults")
    assert stored is not None
    assert {k: stored["spec"][k] for k in DEFAULTS} == dict(DEFAULTS)
    calls = admission.recorder.mutations_of("defaults")
    assert calls, "the apiserver never called the mutating webhook"
    for request, response in calls:
        obj = request["object"]
        assert isinstance(obj, Mapping)
        assert {k: obj["spec"][k] for k in DEFAULTS} == dict(DEFAULTS)
        assert response.allowed and response.patch is None


def _standin_crd() -> dict[str, Any]:
    """A CronJob stand-in whose schema has no defaults (spec kept as sent)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"standincronjobs.{STANDIN_GROUP}"},
        "spec": {"group": STANDIN_GROUP, "scope": "Namespaced",
                 # Its own names: kubectl's "cronjobs" stays as unambiguous as it was.
                 "names": {"plural": "standincronjobs", "singular": "standincronjob",
                           "kind": "StandinCronJob", "listKind": "StandinCronJobList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                         "type": "object",
                         "x-kubernetes-preserve-unknown-fields": True}}}}}]},
    }


def test_mutating_webhook_patch_fills_the_defaults_on_a_kind_without_schema_defaults(
        admission: Admission, other_namespace: str) -> None:
    cp, namespace = admission.cp, admission.namespace
    cp.install_crds([_standin_crd()])
    # The project's mutating configuration, unchanged but for its rules: the stand-in kind.
    mutating = [d for d in load_manifests([WEBHOOK_MANIFEST])
                if d["kind"] == "MutatingWebhookConfiguration"]
    for hook in mutating[0]["webhooks"]:
        for rule in hook["rules"]:
            rule["apiGroups"], rule["resources"] = [STANDIN_GROUP], ["standincronjobs"]
    api_version = f"{STANDIN_GROUP}/v1"
    standin = cp.install_webhooks(
        mutating, admission.server.url_base, admission.server.ca_pem,
        namespaces=[namespace], name_suffix=f"-standin-{namespace}",
        probe=_cronjob(namespace, "probe", api_version=api_version, kind="StandinCronJob"))
    resource = f"standincronjobs.{STANDIN_GROUP}"
    try:
        admitted, output = admission.apply(_cronjob(namespace, "patched",
                                                    api_version=api_version,
                                                    kind="StandinCronJob"))
        assert admitted, output
        stored = admission.get("patched", resource)
        assert stored is not None
        assert {k: stored["spec"].get(k) for k in DEFAULTS} == dict(DEFAULTS)
        # Control: where the webhook is not called, nothing fills them.
        admitted, output = admission.apply(_cronjob(other_namespace, "unpatched",
                                                    api_version=api_version,
                                                    kind="StandinCronJob"))
        assert admitted, output
        bare = admission.get("unpatched", resource, namespace=other_namespace)
        assert bare is not None
        assert not set(DEFAULTS) & set(bare["spec"])
    finally:
        standin.uninstall()
        cp.kubectl("delete", "crd", resource, "--wait=false", check=False)


def test_failure_policy_fail_with_the_server_stopped_denies_writes_until_it_is_back(
        admission: Admission, other_namespace: str) -> None:
    ns = admission.namespace
    admitted, output = admission.apply(_cronjob(ns, "before"))
    assert admitted, output

    def reschedule() -> tuple[bool, str]:
        # An update; kubectl patch, because client-side apply retries a refused patch for
        # seconds before it gives up.
        out = admission.cp.kubectl("patch", CRONJOBS, "before", "-n", ns, "--type=merge",
                                   "-p", '{"spec":{"schedule":"*/7 * * * *"}}', check=False)
        return out.returncode == 0, out.stdout + out.stderr

    admission.server.stop()
    for admitted, output in (admission.apply(_cronjob(ns, "during")), reschedule()):
        assert not admitted
        assert 'failed calling webhook "mcronjob.batch.pyctrl.io"' in output, output
        assert "connection refused" in output, output
    assert admission.get("during") is None
    before = admission.get("before")
    assert before is not None and before["spec"]["schedule"] == VALID
    # Scoped: the rest of the suite keeps writing CronJobs meanwhile.
    admitted, output = admission.apply(_cronjob(other_namespace, "elsewhere"))
    assert admitted, output

    admission.server.start()  # same port, same URL
    assert poll(lambda: admission.apply(_cronjob(ns, "during"))[0], timeout=15, interval=0.2)
    admitted, output = reschedule()
    assert admitted, output


def test_writes_work_again_after_a_ca_and_serving_cert_rotation(admission: Admission) -> None:
    ns, server = admission.namespace, admission.server
    assert server.server is not None
    reloads = server.server.certs.reloads
    rotated = server.rotate()
    # cert-manager's order: the CA injector updates caBundle, the kubelet updates the
    # mounted Secret later; in between the apiserver does not trust the served cert.
    admission.reinstall(rotated.ca_file.read_bytes())

    def refused_by_tls() -> str | None:
        admitted, output = admission.apply(_cronjob(ns, "x509"))
        return output if not admitted and "failed calling webhook" in output else None

    failure = poll(refused_by_tls, timeout=20, interval=0.2)
    assert failure and "x509" in failure, failure

    install_serving_cert(rotated, server.cert_dir)
    assert poll(lambda: server.server is not None and server.server.certs.reloads > reloads,
                timeout=10), "the server never reloaded its certificate"
    assert poll(lambda: admission.apply(_cronjob(ns, "rotated"))[0], timeout=20, interval=0.2)
    admitted, output = admission.apply(_cronjob(ns, "invalid", "@every 10s"))
    assert not admitted and _denial("@every 10s", "invalid")[1] in output, output
