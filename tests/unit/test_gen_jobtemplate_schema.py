"""hack/gen_jobtemplate_schema.py without an apiserver: conversion rules and text splicing.

The conversion is checked on a small OpenAPI v3 document shaped like the apiserver's (allOf
wrappers with ``default: {}``, zero-value defaults, int-or-string, Quantity, patch and union
extensions); the splice on the shipped CRD file (only the jobTemplate block and the header line
change, comments elsewhere survive, a second run changes nothing). The shipped CRD itself must
say it was generated from the Kubernetes version pinned in hack/controlplane/go.mod; that it
is exactly what that apiserver publishes is the integration test's job
(tests/integration/cronjob/test_jobtemplate_schema.py).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "crds" / "cronjobs.batch.pyctrl.io.yaml"


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


def test_splice_changes_only_the_job_template_block_and_is_idempotent() -> None:
    text = CRD_FILE.read_text()
    new_text = gen.regenerate(text, _openapi(), "v9.9.9")
    assert gen.regenerate(new_text, _openapi(), "v9.9.9") == new_text
    old, new = gen.load_yaml(text), gen.load_yaml(new_text)
    old_schema = old["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    new_schema = new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    old_template = old_schema["properties"]["spec"]["properties"].pop("jobTemplate")
    new_template = new_schema["properties"]["spec"]["properties"].pop("jobTemplate")
    assert old == new
    assert new_template["description"] == old_template["description"]
    # Every comment outside the generated block survives, in order; the markers are updated.
    def comments(t: str) -> list[str]:
        return [line.strip() for line in t.splitlines() if line.strip().startswith("#")
                and "gen_jobtemplate_schema" not in line]
    assert comments(new_text) == comments(text)
    assert new_text.count("generated from Kubernetes v9.9.9") == 1
    assert "Generated by hack/gen_jobtemplate_schema.py (Kubernetes v9.9.9)" in new_text


def test_shipped_crd_is_generated_from_the_pinned_kubernetes_version() -> None:
    gomod = (ROOT / "hack" / "controlplane" / "go.mod").read_text()
    pinned = re.search(r"^\s*k8s\.io/kubernetes (v\S+)", gomod, re.MULTILINE)
    assert pinned
    text = CRD_FILE.read_text()
    assert f"# spec.jobTemplate is generated from Kubernetes {pinned.group(1)} " in text
    schema = gen.load_yaml(text)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    template = schema["properties"]["spec"]["properties"]["jobTemplate"]
    assert "x-kubernetes-preserve-unknown-fields" not in json.dumps(template)
    pod = template["properties"]["spec"]["properties"]["template"]["properties"]["spec"]
    assert "containers" in pod["required"]
