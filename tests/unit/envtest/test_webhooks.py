"""Unit tests for envtest's webhook rewrite: a webhook configuration in, the one pointed at
a local server out (pure functions; the apiserver part is tested in
tests/integration/webhook/test_admission.py)."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import pytest

from cronjob_controller.webhook import HANDLERS, MUTATE_PATH, VALIDATE_PATH
from pyctrl.testing.envtest import load_manifests
from pyctrl.testing.envtest.webhooks import (
    NAMESPACE_NAME_LABEL,
    namespace_selector,
    rewrite_webhook_configuration,
    webhook_calls,
    webhook_configurations,
)

ROOT = Path(__file__).resolve().parents[3]
WEBHOOK_MANIFEST = ROOT / "manifests" / "components" / "webhook" / "webhook.yaml"
CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
URL = "https://127.0.0.1:40123"


def _config(**webhook: Any) -> dict[str, Any]:
    hook: dict[str, Any] = {
        "name": "vthing.example.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "clientConfig": {"service": {"name": "svc", "namespace": "sys", "path": "/validate",
                                     "port": 443}, "caBundle": "b2xk"},
        "rules": [{"apiGroups": ["example.io"], "apiVersions": ["v1"],
                   "operations": ["CREATE"], "resources": ["things"]}],
    }
    hook.update(webhook)
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "thing", "labels": {"app": "thing"}, "annotations": {
            "cert-manager.io/inject-ca-from": "sys/cert", "note": "kept"}},
        "webhooks": [hook],
    }


def test_service_reference_becomes_url_on_the_local_server_with_the_test_ca() -> None:
    out = rewrite_webhook_configuration(_config(), URL, CA)
    assert out["webhooks"][0]["clientConfig"] == {
        "url": "https://127.0.0.1:40123/validate",  # the service port is not the server's
        "caBundle": base64.b64encode(CA).decode(),
    }


def test_cert_manager_injection_annotation_is_dropped_and_the_rest_kept() -> None:
    out = rewrite_webhook_configuration(_config(), URL, CA)
    assert out["metadata"]["annotations"] == {"note": "kept"}
    assert out["metadata"]["labels"] == {"app": "thing"}
    config = _config()
    del config["metadata"]["annotations"]["note"]
    assert "annotations" not in rewrite_webhook_configuration(config, URL, CA)["metadata"]


def test_input_is_not_modified() -> None:
    config = _config()
    before = copy.deepcopy(config)
    rewrite_webhook_configuration(config, URL, CA, selector=namespace_selector(["a"]),
                                  name_suffix="-x")
    assert config == before


def test_service_without_path_calls_the_root_and_an_existing_url_keeps_its_path() -> None:
    no_path = _config(clientConfig={"service": {"name": "svc", "namespace": "sys"}})
    assert (rewrite_webhook_configuration(no_path, URL + "/", CA)["webhooks"][0]
            ["clientConfig"]["url"]) == "https://127.0.0.1:40123/"
    by_url = _config(clientConfig={"url": "https://hooks.example.io:8443/v?x=1"})
    assert (rewrite_webhook_configuration(by_url, URL, CA)["webhooks"][0]
            ["clientConfig"]["url"]) == "https://127.0.0.1:40123/v?x=1"


def test_namespace_scope_is_anded_with_the_webhooks_own_selector() -> None:
    own = {"matchLabels": {"team": "a"},
           "matchExpressions": [{"key": "tier", "operator": "Exists"}]}
    out = rewrite_webhook_configuration(_config(namespaceSelector=own), URL, CA,
                                        selector=namespace_selector(["t-1", "t-2"]))
    assert out["webhooks"][0]["namespaceSelector"] == {
        "matchLabels": {"team": "a"},
        "matchExpressions": [
            {"key": "tier", "operator": "Exists"},
            {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": ["t-1", "t-2"]},
        ],
    }
    unscoped = rewrite_webhook_configuration(_config(), URL, CA)
    assert "namespaceSelector" not in unscoped["webhooks"][0]


def test_conflicting_match_labels_are_refused() -> None:
    config = _config(namespaceSelector={"matchLabels": {"team": "a"}})
    with pytest.raises(ValueError, match="team"):
        rewrite_webhook_configuration(config, URL, CA, selector={"matchLabels": {"team": "b"}})


def test_name_suffix_and_server_fields_for_a_fresh_create() -> None:
    config = _config()
    config["metadata"].update(resourceVersion="7", uid="u", creationTimestamp="t",
                              managedFields=[{}], generation=2)
    config["status"] = {}
    out = rewrite_webhook_configuration(config, URL, CA, name_suffix="-t-abc")
    assert out["metadata"]["name"] == "thing-t-abc"
    assert set(out["metadata"]) == {"name", "labels", "annotations"}
    assert "status" not in out


@pytest.mark.parametrize(("config", "url", "match"), [
    ({"kind": "Service", "metadata": {"name": "s"}}, URL, "not a webhook configuration"),
    (_config(), "http://127.0.0.1:1", "https"),
    (_config(clientConfig={}), URL, "neither service nor url"),
])
def test_invalid_inputs_are_refused(config: dict[str, Any], url: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        rewrite_webhook_configuration(config, url, CA)


def test_namespace_selector_needs_a_namespace() -> None:
    with pytest.raises(ValueError):
        namespace_selector([])


def test_project_manifest_rewrites_to_the_paths_the_cronjob_handlers_serve() -> None:
    docs = load_manifests([WEBHOOK_MANIFEST])
    configs = webhook_configurations([*docs, {"kind": "Service", "metadata": {"name": "s"}}])
    assert [c["kind"] for c in configs] == ["MutatingWebhookConfiguration",
                                            "ValidatingWebhookConfiguration"]
    urls = []
    for config in configs:
        out = rewrite_webhook_configuration(config, URL, CA, selector=namespace_selector(["n"]))
        assert "annotations" not in out["metadata"]
        for hook in out["webhooks"]:
            assert hook["failurePolicy"] == "Fail"
            assert hook["namespaceSelector"]["matchExpressions"][0]["values"] == ["n"]
            urls.append(hook["clientConfig"]["url"])
    assert urls == [URL + MUTATE_PATH, URL + VALIDATE_PATH]
    assert {MUTATE_PATH, VALIDATE_PATH} <= set(HANDLERS)


METRICS = """\
# HELP apiserver_admission_webhook_request_total [ALPHA] Admission webhook request total
# TYPE apiserver_admission_webhook_request_total counter
apiserver_admission_webhook_request_total{code="200",name="m.x.io",operation="CREATE",rejected="false",type="admit"} 2
apiserver_admission_webhook_request_total{code="422",name="v.x.io",operation="CREATE",rejected="true",type="validating"} 3
apiserver_admission_webhook_request_total{code="503",name="m.x.io",operation="CREATE",rejected="true",type="admit"} 1
apiserver_admission_webhook_request_total{code="200",name="other.io",operation="UPDATE",rejected="false",type="admit"} 9
apiserver_admission_webhook_rejection_count{error_type="no_error",name="v.x.io",operation="CREATE",rejection_code="422",type="validating"} 3
"""  # noqa: E501


def test_webhook_calls_count_answers_separately_from_failed_calls() -> None:
    names = ["m.x.io", "v.x.io", "absent.io"]
    assert webhook_calls(METRICS, names) == {"m.x.io": 2, "v.x.io": 3, "absent.io": 0}
    assert webhook_calls(METRICS, names, answered_only=False) == {
        "m.x.io": 3, "v.x.io": 3, "absent.io": 0}
