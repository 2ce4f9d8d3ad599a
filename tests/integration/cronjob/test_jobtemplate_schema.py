"""spec.jobTemplate is validated at apply with the real batch/v1 JobTemplateSpec schema.

Against the real API server: a template with a misspelled field (``containerz``) or a wrong
type is refused when it is applied, with a message naming the field, instead of being stored
and failing at every tick; a template that uses much of PodSpec is stored exactly as written
(nothing pruned) and the controller's Job built from it is accepted by batch/v1; and the CRD
file's jobTemplate and pyctrl.api's OpenAPI snapshot are what this apiserver publishes
(``hack/gen_jobtemplate_schema.py --check``).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cronjob_controller.api import CRONJOBS
from cronjob_controller.jobs import job_name
from pyctrl import RESTClient
from pyctrl.errors import Invalid
from pyctrl.kube import JOBS
from pyctrl.testing.envtest import ControlPlane
from tests.integration.cronjob.env import Env, cronjob_body, wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
CRD_FILE = ROOT / "crds" / "cronjobs.batch.pyctrl.io.yaml"
GENERATOR = ROOT / "hack" / "gen_jobtemplate_schema.py"
SNAPSHOT_FILE = ROOT / "pyctrl" / "api" / "kubernetes-openapi.json"

Obj = dict[str, Any]


def _pod_spec(body: Obj) -> Obj:
    spec: Obj = body["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return spec


def _kubectl_apply(control_plane: ControlPlane, namespace: str,
                   body: Obj) -> subprocess.CompletedProcess[str]:
    """``kubectl apply`` as a user runs it (client-side, field validation Strict)."""
    return control_plane.kubectl("apply", "-n", namespace, "-f", "-",
                                 input=json.dumps(body), check=False)


def test_misspelled_template_field_is_rejected_by_kubectl_apply(
    control_plane: ControlPlane, namespace: str, client: RESTClient
) -> None:
    body = cronjob_body("typo")
    pod = _pod_spec(body)
    pod["containerz"] = pod.pop("containers")
    out = _kubectl_apply(control_plane, namespace, body)
    assert out.returncode != 0, out.stdout
    assert "spec.jobTemplate.spec.template.spec.containerz" in out.stderr, out.stderr
    assert client.list(CRONJOBS, namespace)["items"] == []


def test_missing_containers_is_rejected_even_when_unknown_fields_are_pruned(
    client: RESTClient, namespace: str
) -> None:
    # Without Strict field validation the apiserver drops ``containerz``; the required
    # ``containers`` is then what is missing, and the error says where.
    body = cronjob_body("pruned")
    pod = _pod_spec(body)
    pod["containerz"] = pod.pop("containers")
    with pytest.raises(Invalid) as err:
        client.create(CRONJOBS, body, namespace)
    assert "spec.jobTemplate.spec.template.spec.containers" in str(err.value)


@pytest.mark.parametrize(("path", "value", "field"), [
    (("spec", "backoffLimit"), "x", "spec.jobTemplate.spec.backoffLimit"),
    (("spec", "template", "spec", "containers"), {"name": "c"},
     "spec.jobTemplate.spec.template.spec.containers"),
    (("spec", "template", "spec", "containers", 0, "resources"),
     {"limits": {"cpu": "banana"}},
     "spec.jobTemplate.spec.template.spec.containers[0].resources.limits.cpu"),
    (("spec", "template", "spec", "containers", 0, "ports"),
     [{"containerPort": 80}, {"containerPort": 80}],
     "spec.jobTemplate.spec.template.spec.containers[0].ports[1]"),
    (("spec", "template", "metadata"), {"labels": {"a": 1}},
     "spec.jobTemplate.spec.template.metadata.labels.a"),
])
def test_wrong_types_and_values_in_template_are_rejected(
    client: RESTClient, namespace: str, path: tuple[str | int, ...], value: Any, field: str
) -> None:
    body = cronjob_body("wrong")
    node: Any = body["spec"]["jobTemplate"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(Invalid) as err:
        client.create(CRONJOBS, body, namespace)
    message = str(err.value) + " ".join(c.field for c in err.value.causes)
    assert field in message, message


RICH_POD_SPEC: Obj = {
    "restartPolicy": "Never",
    "serviceAccountName": "default",
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "batch", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}},
    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000,
                        "seccompProfile": {"type": "RuntimeDefault"}},
    "imagePullSecrets": [{"name": "registry"}],
    "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "64Mi"}},
                {"name": "config", "configMap": {"name": "cfg", "defaultMode": 420}}],
    "initContainers": [{"name": "init", "image": "busybox:1.36", "command": ["true"]}],
    "containers": [{
        "name": "main", "image": "busybox:1.36",
        "command": ["sh", "-c"], "args": ["date"],
        "env": [{"name": "A", "value": "1"},
                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "envFrom": [{"configMapRef": {"name": "cfg"}}],
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "100m", "memory": 64 * 1024 * 1024},
                      "limits": {"cpu": 1, "memory": "128Mi"}},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"},
                          "periodSeconds": 10},
        "readinessProbe": {"tcpSocket": {"port": 8080}},
        "volumeMounts": [{"name": "scratch", "mountPath": "/tmp"},
                         {"name": "config", "mountPath": "/etc/cfg", "readOnly": True}],
        "securityContext": {"allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]}},
    }],
}


def test_rich_template_is_stored_as_written_and_its_job_is_accepted(env: Env) -> None:
    body = cronjob_body("rich")
    template = body["spec"]["jobTemplate"]
    template["spec"].update({
        "backoffLimit": 2, "activeDeadlineSeconds": 600, "ttlSecondsAfterFinished": 60,
        "completions": 1, "parallelism": 1, "completionMode": "NonIndexed",
        "podFailurePolicy": {"rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]},
    })
    template["spec"]["template"]["metadata"] = {"labels": {"app": "rich"},
                                                "annotations": {"note": "x"}}
    template["spec"]["template"]["spec"] = copy.deepcopy(RICH_POD_SPEC)
    sent = copy.deepcopy(template)
    created = env.client.create(CRONJOBS, body, env.namespace)
    # Nothing pruned, nothing added: the schema knows every field used above.
    assert created["spec"]["jobTemplate"] == sent
    env.start()
    due = env.next_minute()
    name = job_name("rich", due)
    wait_for(env.has_job("rich", name), what=f"job {name}")
    job = env.client.get(JOBS, name, env.namespace)
    pod = job["spec"]["template"]["spec"]
    assert pod["containers"][0]["livenessProbe"]["httpGet"]["port"] == "http"
    assert pod["containers"][0]["resources"]["limits"] == {"cpu": "1", "memory": "128Mi"}
    assert job["spec"]["podFailurePolicy"] == sent["spec"]["podFailurePolicy"]


def test_job_template_metadata_takes_only_labels_and_annotations(
    control_plane: ControlPlane, namespace: str
) -> None:
    body = cronjob_body("meta")
    body["spec"]["jobTemplate"]["metadata"]["name"] = "ignored-by-the-controller"
    out = _kubectl_apply(control_plane, namespace, body)
    assert out.returncode != 0
    assert "spec.jobTemplate.metadata.name" in out.stderr, out.stderr


def _recorded_version() -> str:
    """The Kubernetes version of the OpenAPI snapshot spec.jobTemplate is expanded from."""
    version: str = json.loads(SNAPSHOT_FILE.read_text())["kubernetesVersion"]
    return version


def _check(control_plane: ControlPlane, crd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GENERATOR), "--check", "--kubeconfig",
         control_plane.kubeconfig_path, "--crd", str(crd)],
        capture_output=True, text=True, timeout=120, check=False)


def test_crd_job_template_is_generated_from_this_apiserver(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    server = json.loads(control_plane.kubectl("get", "--raw", "/version").stdout)
    if server["gitVersion"] != _recorded_version():
        pytest.skip(f"cluster runs {server['gitVersion']}, the CRD is generated from "
                    f"{_recorded_version()}")
    out = _check(control_plane, CRD_FILE)
    assert out.returncode == 0, out.stdout + out.stderr
    # The check can fail: a hand edit inside the generated subtree is reported.
    edited = tmp_path / CRD_FILE.name
    edited.write_text(CRD_FILE.read_text().replace(" backoffLimit:", " backofLimit:", 1))
    assert edited.read_text() != CRD_FILE.read_text()
    out = _check(control_plane, edited)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "backofLimit" in out.stdout
