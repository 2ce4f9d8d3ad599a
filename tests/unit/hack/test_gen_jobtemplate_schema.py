"""hack/gen_jobtemplate_schema.py without an apiserver: conversion rules and --check.

The conversion is checked on a small OpenAPI v3 document shaped like the apiserver's (allOf
wrappers with ``default: {}``, zero-value defaults, int-or-string, Quantity, patch and union
extensions); ``--check`` on the committed snapshot (pyctrl/api/kubernetes-openapi.json) and
CRD passes and reports a hand edit. The snapshot must be from the Kubernetes version pinned in
pyctrl/testing/envtest/gomod/go.mod; that it is exactly what that apiserver publishes is the
integration test's job (tests/integration/cronjob/test_jobtemplate_schema.py).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
CRD_FILE = ROOT / "crds" / "cronjobs.batch.pyctrl.io.yaml"
SNAPSHOT = ROOT / "pyctrl" / "api" / "kubernetes-openapi.json"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_jobtemplate_schema", ROOT / "hack" / "gen_jobtemplate_schema.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _load()


def _ref(name: str, **extra: Any) -> dict[str, Any]:
    return {"allOf": [{"$ref": f"#/components/schemas/{name}"}], "default": {}, **extra}


def _openapi() -> dict[str, Any]:
    meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    return {"components": {"schemas": {
        "io.k8s.api.batch.v1.JobTemplateSpec": {"type": "object", "description": "d",
            "properties": {"metadata": _ref(meta), "spec": _ref("io.k8s.api.batch.v1.JobSpec")}},
        "io.k8s.api.batch.v1.JobSpec": {"type": "object", "required": ["template"],
            "properties": {
                "backoffLimit": {"type": "integer", "format": "int32", "description": "x"},
                "template": _ref("io.k8s.api.core.v1.PodTemplateSpec"),
            }},
        "io.k8s.api.core.v1.PodTemplateSpec": {"type": "object", "properties": {
            "metadata": _ref(meta), "spec": _ref("io.k8s.api.core.v1.PodSpec")}},
        "io.k8s.api.core.v1.PodSpec": {"type": "object", "required": ["containers"],
            "properties": {
                "containers": {"type": "array", "items": _ref("io.k8s.api.core.v1.Container"),
                               "x-kubernetes-list-type": "map",
                               "x-kubernetes-list-map-keys": ["name"],
                               "x-kubernetes-patch-strategy": "merge",
                               "x-kubernetes-patch-merge-key": "name"},
                "seccompProfile": {"type": "object", "x-kubernetes-unions": [{}],
                                   "properties": {"type": {"type": "string", "default": ""}}},
            }},
        "io.k8s.api.core.v1.Container": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "default": ""},
            "port": _ref("io.k8s.apimachinery.pkg.util.intstr.IntOrString"),
            "limits": {"type": "object", "additionalProperties": _ref(
                "io.k8s.apimachinery.pkg.api.resource.Quantity")},
            "ports": {"type": "array", "items": _ref("io.k8s.api.core.v1.ContainerPort"),
                      "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["containerPort", "protocol"]},
        }},
        "io.k8s.api.core.v1.ContainerPort": {"type": "object", "required": ["containerPort"],
            "properties": {"containerPort": {"type": "integer", "default": 0},
                           "protocol": {"type": "string", "default": "TCP",
                                        "enum": ["SCTP", "TCP", "UDP"]}}},
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
            "format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]},
        "io.k8s.apimachinery.pkg.api.resource.Quantity": {
            "oneOf": [{"type": "string"}, {"type": "number"}]},
        meta: {"type": "object", "properties": {
            "name": {"type": "string"}, "generateName": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string",
                                                                  "default": ""}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "items": {"type": "string"},
                           "x-kubernetes-list-type": "set"},
            "namespace": {"type": "string"},
            "ownerReferences": {"type": "array", "items": {"type": "object"}},
        }},
    }}}


def test_refs_are_inlined_into_one_structural_schema() -> None:
    out = gen.job_template_schema(_openapi(), {"description": "mine", "required": ["spec"]})
    text = json.dumps(out)
    for gone in ("$ref", "allOf", "oneOf", "x-kubernetes-patch", "x-kubernetes-unions",
                 "x-kubernetes-preserve-unknown-fields", '"int-or-string"'):
        assert gone not in text, gone
    assert (out["description"], out["required"]) == ("mine", ["spec"])
    job = out["properties"]["spec"]
    assert job["required"] == ["template"]
    assert job["properties"]["backoffLimit"] == {"type": "integer", "format": "int32"}
    pod_template = job["properties"]["template"]["properties"]
    container = pod_template["spec"]["properties"]["containers"]
    assert (container["x-kubernetes-list-type"], container["x-kubernetes-list-map-keys"]) == (
        "map", ["name"])
    props = container["items"]["properties"]
    # A required list-map key keeps no (zero-value) default, so required still bites ...
    assert props["name"] == {"type": "string"}
    assert props["port"] == {"x-kubernetes-int-or-string": True}
    quantity = props["limits"]["additionalProperties"]
    assert quantity["x-kubernetes-int-or-string"] is True and "type" not in quantity
    assert re.match(quantity["pattern"], "500m") and not re.match(quantity["pattern"], "x")
    # ... and a list-map key that is not required keeps upstream's default (structural rule).
    port = props["ports"]["items"]["properties"]
    assert port["protocol"] == {"type": "string", "enum": ["SCTP", "TCP", "UDP"],
                                "default": "TCP"}
    assert port["containerPort"] == {"type": "integer"}
    assert "default" not in json.dumps(pod_template["spec"]["properties"]["seccompProfile"])


def test_object_meta_keeps_only_what_is_used() -> None:
    out = gen.job_template_schema(_openapi(), {})
    assert set(out["properties"]["metadata"]["properties"]) == {"labels", "annotations"}
    pod_meta = out["properties"]["spec"]["properties"]["template"]["properties"]["metadata"]
    assert set(pod_meta["properties"]) == {"annotations", "finalizers", "labels", "name",
                                           "namespace"}
    assert pod_meta["properties"]["labels"]["additionalProperties"] == {"type": "string"}


def test_unknown_constructs_are_errors_not_guesses() -> None:
    doc = _openapi()
    doc["components"]["schemas"]["io.k8s.api.batch.v1.JobSpec"]["properties"]["odd"] = {
        "anyOf": [{"type": "string"}]}
    with pytest.raises(gen.GenerateError, match="anyOf"):
        gen.job_template_schema(doc, {})
    doc = _openapi()
    ports = doc["components"]["schemas"]["io.k8s.api.core.v1.ContainerPort"]["properties"]
    del ports["protocol"]["default"]
    with pytest.raises(gen.GenerateError, match="protocol"):
        gen.job_template_schema(doc, {})


def test_check_passes_on_the_committed_snapshot_and_crd_and_reports_a_hand_edit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    version = json.loads(SNAPSHOT.read_text())["kubernetesVersion"]
    args = ["--check", "--openapi", str(SNAPSHOT), "--version", version]
    assert gen.main([*args, "--crd", str(CRD_FILE)]) == 0
    edited = tmp_path / CRD_FILE.name
    edited.write_text(CRD_FILE.read_text().replace(" backoffLimit:", " backofLimit:", 1))
    capsys.readouterr()
    assert gen.main([*args, "--crd", str(edited)]) == 1
    out, err = capsys.readouterr()
    assert "backofLimit" in out and "spec.jobTemplate is out of date" in err
    assert gen.main([*args[:-1], "v0.0.1", "--crd", str(CRD_FILE)]) == 1  # snapshot tag


def test_snapshot_is_from_the_pinned_kubernetes_version() -> None:
    gomod = (ROOT / "pyctrl" / "testing" / "envtest" / "gomod" / "go.mod").read_text()
    pinned = re.search(r"^\s*k8s\.io/kubernetes (v\S+)", gomod, re.MULTILINE)
    assert pinned
    assert json.loads(SNAPSHOT.read_text())["kubernetesVersion"] == pinned.group(1)
    schema = gen.load_yaml(CRD_FILE.read_text())["spec"]["versions"][0]["schema"][
        "openAPIV3Schema"]
    template = schema["properties"]["spec"]["properties"]["jobTemplate"]
    assert "x-kubernetes-preserve-unknown-fields" not in json.dumps(template)
    pod = template["properties"]["spec"]["properties"]["template"]["properties"]["spec"]
    assert "containers" in pod["required"]
