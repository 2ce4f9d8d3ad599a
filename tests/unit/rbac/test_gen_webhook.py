"""``python -m pyctrl gen webhook``: webhook configurations from handlers' Admission."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pyctrl import CONFIGMAPS, Manager
from pyctrl.cli import main
from pyctrl.webhook import (
    Admission,
    ServiceTarget,
    WebhookServer,
    WebhookServerOptions,
    allowed,
)
from pyctrl.webhook.configuration import configurations, to_yaml

ROOT = Path(__file__).resolve().parents[3]
CRONJOB_ARGS = ["cronjob_controller.webhook:setup",
                "--service", "pyctrl-system/cronjob-controller",
                "--name", "pyctrl-cronjob-controller",
                "--label", "app.kubernetes.io/name=cronjob-controller",
                "--label", "app.kubernetes.io/part-of=pyctrl",
                "--annotation", "cert-manager.io/inject-ca-from=pyctrl-system/"
                "cronjob-controller-webhook"]


def setup(manager: Manager) -> None:
    """A module-level setup for the CLI: two handlers with an Admission, one without."""
    server = WebhookServer(WebhookServerOptions(cert_dir="/nowhere"))
    server.register("/validate-cm", lambda request: allowed(),
                    admission=Admission("validating", CONFIGMAPS, operations=("CREATE",),
                                        failure_policy="Ignore", timeout_seconds=3))
    server.register("/mutate-cm", lambda request: allowed(),
                    admission=Admission("mutating", CONFIGMAPS))
    server.register("/other", lambda request: allowed())
    manager.add(server)


def no_webhook(manager: Manager) -> None:
    del manager


def test_the_cronjob_webhook_configurations_are_generated_from_its_handlers() -> None:
    assert main(["gen", "webhook", *CRONJOB_ARGS, "--check",
                 str(ROOT / "manifests" / "components" / "webhook" / "webhook.yaml")]) == 0


def test_url_target_rules_and_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gen", "webhook", f"{__name__}:setup", "--url", "https://10.0.0.1:9443/",
                 "--name", "cm-hooks"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["kind"] for d in docs] == ["MutatingWebhookConfiguration",
                                         "ValidatingWebhookConfiguration"]
    (mutating,) = docs[0]["webhooks"]
    assert mutating == {
        "name": "mconfigmap.core", "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "failurePolicy": "Fail", "timeoutSeconds": 10,
        "clientConfig": {"url": "https://10.0.0.1:9443/mutate-cm"},
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                   "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]}
    (validating,) = docs[1]["webhooks"]
    assert (validating["failurePolicy"], validating["timeoutSeconds"]) == ("Ignore", 3)
    assert validating["rules"][0]["operations"] == ["CREATE"]


def test_only_kinds_with_webhooks_are_written_and_sorted_by_name() -> None:
    hooks = {"/b": Admission("validating", CONFIGMAPS, name="b.example.io"),
             "/a": Admission("validating", CONFIGMAPS, name="a.example.io")}
    configs = configurations(hooks, ServiceTarget("ns", "svc", 8443))
    assert [kind for kind, _ in configs] == ["ValidatingWebhookConfiguration"]
    text = to_yaml(configs, name="x")
    (doc,) = yaml.safe_load_all(text)
    assert [h["name"] for h in doc["webhooks"]] == ["a.example.io", "b.example.io"]
    assert doc["webhooks"][0]["clientConfig"]["service"] == {
        "name": "svc", "namespace": "ns", "path": "/a", "port": 8443}


def test_admission_validation() -> None:
    with pytest.raises(ValueError, match="timeout"):
        Admission("validating", CONFIGMAPS, timeout_seconds=31)
    with pytest.raises(ValueError, match="operations"):
        Admission("validating", CONFIGMAPS, operations=("PATCH",))
    with pytest.raises(ValueError, match="qualified"):
        Admission("mutating", CONFIGMAPS, name="plain")


@pytest.mark.parametrize("argv", [
    [f"{__name__}:no_webhook", "--service", "ns/svc"],
    [f"{__name__}:setup", "--service", "svc"],
    [f"{__name__}:setup", "--url", "http://insecure"],
])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gen", "webhook", *argv]) == 2
    assert capsys.readouterr().err.startswith("error: ")
