"""Every built-in kind typed (issue 41 item 5): a module for every group/version of the pinned
Kubernetes version's spec, every class decodes what the server may omit, every kind carries
the REST facts the spec's paths give, the free-form and two-shape schemas (RawExtension, the
CRD's JSONSchemaProps) decode both shapes, and the modules are imported lazily: ``import
pyctrl`` imports none, and a module only the ones it references."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import re
import subprocess
import sys
from types import ModuleType
from typing import Any

import msgspec
import pytest

import pyctrl.models
from pyctrl import api
from tests.unit.models.test_models import ROOT, gen

MODULES = sorted(m.name for m in pkgutil.iter_modules(pyctrl.models.__path__))


def _snapshot() -> dict[str, Any]:
    result: dict[str, Any] = json.loads(gen.SNAPSHOT.read_text())
    return result


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"pyctrl.models.{name}")


def _classes() -> list[type[msgspec.Struct]]:
    """The generated classes (not meta_v1's re-exports of pyctrl.api.types)."""
    found = [getattr(_module(m), name) for m in MODULES for name in _module(m).__all__]
    return [cls for cls in found if cls.__module__.startswith("pyctrl.models.")]


def test_every_group_version_of_the_pinned_spec_has_a_module() -> None:
    modules = _snapshot()["modules"]
    assert sorted(modules) == MODULES
    served = set(modules.values())
    # The GA groups, and alpha/beta ones (served only when the cluster enables them).
    assert {"v1", "apps/v1", "batch/v1", "events.k8s.io/v1", "apiextensions.k8s.io/v1",
            "apiregistration.k8s.io/v1", "autoscaling/v2", "policy/v1", "storage.k8s.io/v1",
            "resource.k8s.io/v1", "resource.k8s.io/v1beta2",
            "admissionregistration.k8s.io/v1alpha1"} <= served
    spec_dir = gen.default_spec_dir(gen.pinned_version())
    if spec_dir is None:
        pytest.skip("the pinned k8s.io/kubernetes is not in the Go module cache")
    documents = set()
    for path in spec_dir.iterdir():
        match = gen.DOCUMENT.fullmatch(path.name)
        if match:
            group = match[1].removeprefix("api").removeprefix("s__")
            documents.add(f"{group}/{match[2]}" if group else match[2])
    assert documents == served - {"meta/v1"}


def test_every_class_decodes_an_empty_object_and_encodes_back() -> None:
    classes = _classes()
    assert len(classes) > 600
    for cls in classes:
        obj = msgspec.json.decode(b"{}", type=cls)
        assert obj == cls(), cls
        assert msgspec.json.decode(msgspec.json.encode(obj), type=cls) == obj, cls


def test_every_kind_carries_the_facts_of_its_paths() -> None:
    snapshot = _snapshot()
    kinds = 0
    for full, facts in snapshot["kinds"].items():
        prefix, _, name = full.rpartition(".")
        module = gen.module_of_prefix(prefix)
        cls = getattr(_module(module), name)
        assert issubclass(cls, api.Object), full
        res = api.resource_for(cls)
        group, _, version = snapshot["modules"][module].rpartition("/")
        assert (res.group, res.version, res.plural, res.kind, res.namespaced) == (
            group, version, facts["plural"], name, facts["scope"] == "Namespaced"), full
        assert api.kind_info(cls).status_subresource == facts["status"], full
        encoded = api.encode(cls())
        assert (encoded["apiVersion"], encoded["kind"]) == (res.api_version, name)
        kinds += 1
    assert kinds >= 85


@pytest.mark.parametrize(("module", "name", "plural", "namespaced"), [
    ("authentication_v1", "TokenReview", "tokenreviews", False),  # created, never listed
    ("authorization_v1", "LocalSubjectAccessReview", "localsubjectaccessreviews", True),
    ("core_v1", "Binding", "bindings", True),
    ("events_v1", "Event", "events", True),
    ("apiextensions_v1", "CustomResourceDefinition", "customresourcedefinitions", False),
    ("resource_v1beta2", "ResourceClaim", "resourceclaims", True),
])
def test_kinds_beyond_the_first_21(module: str, name: str, plural: str,
                                   namespaced: bool) -> None:
    res = api.resource_for(getattr(_module(module), name))
    assert (res.plural, res.namespaced) == (plural, namespaced)


@pytest.mark.parametrize(("module", "name"), [
    ("autoscaling_v1", "Scale"), ("policy_v1", "Eviction"), ("authentication_v1", "TokenRequest"),
])
def test_a_subresource_body_is_a_struct_not_a_kind(module: str, name: str) -> None:
    cls = getattr(_module(module), name)
    assert not issubclass(cls, api.Object)
    assert {"apiVersion", "kind", "metadata"} <= set(cls.__struct_encode_fields__)


def test_a_crd_schema_decodes_both_shapes_of_its_two_shape_fields() -> None:
    from pyctrl.models.apiextensions_v1 import CustomResourceDefinition, JSONSchemaProps

    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "things.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "things", "kind": "Thing"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                        "openAPIV3Schema": {
                            "type": "object", "x-kubernetes-preserve-unknown-fields": True,
                            "properties": {
                                "tags": {"type": "array", "items": {"type": "string"}},
                                "pair": {"type": "array",
                                         "items": [{"type": "string"}, {"type": "integer"}]},
                                "labels": {"type": "object",
                                           "additionalProperties": {"type": "string"}},
                                "closed": {"type": "object", "additionalProperties": False},
                                "mode": {"type": "string", "default": "fast",
                                         "enum": ["fast", "slow"]},
                                "$ref": {"$ref": "#/definitions/x"},
                            }}}}]}}
    obj = msgspec.json.decode(msgspec.json.encode(crd), type=CustomResourceDefinition)
    schema = obj.spec.versions[0].schema
    assert schema is not None and schema.open_apiv3_schema is not None
    root = schema.open_apiv3_schema
    assert root.x_kubernetes_preserve_unknown_fields is True
    props = root.properties
    assert isinstance(props["tags"].items, JSONSchemaProps)
    assert isinstance(props["pair"].items, tuple | list) and len(props["pair"].items) == 2
    assert isinstance(props["labels"].additional_properties, JSONSchemaProps)
    assert props["closed"].additional_properties is False
    assert props["mode"].default == "fast" and props["mode"].enum == ["fast", "slow"]
    assert props["$ref"].ref == "#/definitions/x"
    encoded = api.encode(obj)
    assert encoded.pop("status") == {"acceptedNames": {}}  # a Go value field, never omitted
    assert encoded == crd


def test_a_raw_extension_keeps_what_it_holds() -> None:
    from pyctrl.models.apps_v1 import ControllerRevision

    raw = {"metadata": {"name": "web-1"}, "revision": 3,
           "data": {"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}}}
    rev = msgspec.json.decode(msgspec.json.encode(raw), type=ControllerRevision)
    assert rev.data == raw["data"] and rev.revision == 3


def _imported_models(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(sorted("
                          "m for m in sys.modules if m.startswith('pyctrl.models')))"],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return list(json.loads(out.replace("'", '"')))


def test_import_pyctrl_imports_no_model_and_a_model_only_what_it_references() -> None:
    assert _imported_models("import pyctrl") == []
    assert _imported_models("from pyctrl.models.batch_v1 import Job") == [
        "pyctrl.models", "pyctrl.models.batch_v1", "pyctrl.models.core_v1",
        "pyctrl.models.meta_v1"]
    imports = {m: set(re.findall(r"^from pyctrl\.models import (.+)$",
                                 (ROOT / "pyctrl" / "models" / f"{m}.py").read_text(), re.M))
               for m in MODULES}
    assert all(deps <= {"core_v1", "meta_v1", "core_v1, meta_v1"} for deps in imports.values())


def test_a_null_the_server_sends_for_a_nil_list_decodes_as_empty() -> None:
    """An aggregated ClusterRole comes back with ``"rules": null`` (Go writes a nil slice
    without omitempty so); the field reads ``()`` and encodes as absent."""
    from pyctrl.models.core_v1 import PodSpec
    from pyctrl.models.rbac_v1 import ClusterRole, Role

    role = msgspec.json.decode(b'{"metadata": {"name": "admin"}, "aggregationRule": '
                               b'{"clusterRoleSelectors": []}, "rules": null}', type=ClusterRole)
    assert role.rules == () and role.metadata.name == "admin"
    assert "rules" not in api.encode(role)
    assert msgspec.json.decode(b'{"rules": null}', type=Role).rules == ()
    assert msgspec.json.decode(b'{"containers": null}', type=PodSpec).containers == ()
    assert msgspec.json.decode(b'{"rules": [{"verbs": ["get"]}]}', type=Role).rules[
        0].verbs == ["get"]


def test_every_nullable_field_of_the_go_types_decodes_a_null() -> None:
    checked = 0
    for full, schema in _snapshot()["schemas"].items():
        if full in gen.ALIASES or full in gen.TIMES or full in gen.HAND_WRITTEN:
            continue
        prefix, _, name = full.rpartition(".")
        cls = getattr(_module(gen.module_of_prefix(prefix)), name)
        for prop in schema.get(gen.NULLABLE, ()):
            obj = msgspec.json.decode(msgspec.json.encode({prop: None}), type=cls)
            assert obj == cls(), (full, prop)
            checked += 1
    assert checked >= 60


def test_make_models_runs_the_generator() -> None:
    # Run under another make (make pythons), a child prints "Entering/Leaving directory"
    # lines: --no-print-directory and a clean MAKEFLAGS keep the output to the recipe.
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}
    out = subprocess.run(["make", "--no-print-directory", "-n", "models"], capture_output=True,
                         text=True, check=True, cwd=ROOT, env=env).stdout
    assert "hack/gen_models.py" in out.splitlines()[-1]
