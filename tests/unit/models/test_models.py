"""pyctrl.models: the generated built-in kinds are current, decode what the apiserver sends,
re-encode it, and carry their Resource.

``test_generated_package_is_current`` regenerates the package from the committed snapshot
(hack/models-openapi.json) into memory and diffs it against pyctrl/models;
``test_snapshot_matches_pinned_spec`` checks the snapshot against the pinned Kubernetes
version's own spec when the Go module cache holds it (skipped otherwise).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import orjson
import pytest

from pyctrl import api
from pyctrl.api import SchemaError
from pyctrl.models import (
    apps_v1,
    batch_v1,
    coordination_v1,
    core_v1,
    meta_v1,
    networking_v1,
    rbac_v1,
)
from pyctrl.models.batch_v1 import Job
from pyctrl.models.core_v1 import Pod

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "bench" / "fixtures"
MODULES = (apps_v1, batch_v1, coordination_v1, core_v1, meta_v1, networking_v1, rbac_v1)


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_models", ROOT / "hack" / "gen_models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _load_generator()


def _snapshot() -> dict[str, Any]:
    result: dict[str, Any] = json.loads(gen.SNAPSHOT.read_text())
    return result


def _fixture(name: str) -> bytes:
    return orjson.dumps(orjson.loads((FIXTURES / f"{name}.json").read_bytes()))


# -- the generated package is what the generator makes --------------------------------------
def test_generated_package_is_current() -> None:
    files = gen.generate(_snapshot())
    committed = {p.name: p.read_text() for p in (ROOT / "pyctrl" / "models").glob("*.py")}
    assert sorted(files) == sorted(committed)
    stale = [name for name, text in files.items() if committed[name] != text]
    assert not stale, f"pyctrl/models is stale ({stale}): run hack/gen_models.py"


def test_check_reports_a_hand_edit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = gen.generate(_snapshot())
    assert gen.write(files, tmp_path, check=False) == 0
    assert gen.write(files, tmp_path, check=True) == 0
    path = tmp_path / "batch_v1.py"
    path.write_text(path.read_text().replace("class Job(", "class Jobb("))
    assert gen.write(files, tmp_path, check=True) == 1
    assert "class Jobb(" in capsys.readouterr().err


def test_snapshot_matches_pinned_spec() -> None:
    version = gen.pinned_version()
    spec_dir = gen.default_spec_dir(version)
    if spec_dir is None:
        pytest.skip(f"k8s.io/kubernetes@{version} is not in the Go module cache")
    assert gen.snapshot_text(gen.build_snapshot(spec_dir, version)) == gen.SNAPSHOT.read_text()


def test_every_json_name_is_the_specs() -> None:
    """snake_case names map back to the spec's JSON ones (podIPs, hostIPC, Port, $ref,
    x-kubernetes-list-type), for every class of every module."""
    checked = 0
    for full, schema in _snapshot()["schemas"].items():
        if full in gen.ALIASES or full in gen.TIMES:
            continue
        prefix, _, name = full.rpartition(".")
        module = importlib.import_module(f"pyctrl.models.{gen.module_of_prefix(prefix)}")
        want = set(schema.get("properties", ())) - gen.HAND_WRITTEN.get(full, frozenset())
        assert set(getattr(module, name).__struct_encode_fields__) == want, full
        checked += 1
    assert checked > 600


# Issue 32's list: the kinds the first models covered, whose names must never change.
ISSUE_32_KINDS = {
    "core_v1": ("Pod", "ConfigMap", "Secret", "Service", "ServiceAccount", "Namespace", "Node",
                "Event", "PersistentVolumeClaim"),
    "apps_v1": ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"),
    "batch_v1": ("Job", "CronJob"),
    "coordination_v1": ("Lease",),
    "networking_v1": ("Ingress",),
    "rbac_v1": ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"),
}


def test_kinds_listed_by_the_issue_exist() -> None:
    for module_name, kinds in ISSUE_32_KINDS.items():
        module = sys.modules[f"pyctrl.models.{module_name}"]
        for kind in kinds:
            assert issubclass(getattr(module, kind), api.Object), kind


# -- resources are derived from the spec ----------------------------------------------------
@pytest.mark.parametrize(("cls", "group", "version", "plural", "namespaced"), [
    (Job, "batch", "v1", "jobs", True),
    (batch_v1.CronJob, "batch", "v1", "cronjobs", True),
    (Pod, "", "v1", "pods", True),
    (core_v1.Node, "", "v1", "nodes", False),
    (core_v1.Namespace, "", "v1", "namespaces", False),
    (core_v1.Event, "", "v1", "events", True),
    (core_v1.PersistentVolumeClaim, "", "v1", "persistentvolumeclaims", True),
    (apps_v1.StatefulSet, "apps", "v1", "statefulsets", True),
    (coordination_v1.Lease, "coordination.k8s.io", "v1", "leases", True),
    (networking_v1.Ingress, "networking.k8s.io", "v1", "ingresses", True),
    (rbac_v1.ClusterRoleBinding, "rbac.authorization.k8s.io", "v1", "clusterrolebindings",
     False),
])
def test_resource_for_builtin_kind(cls: type[api.Object], group: str, version: str,
                                   plural: str, namespaced: bool) -> None:
    res = api.resource_for(cls)
    assert (res.group, res.version, res.plural, res.kind, res.namespaced) == (
        group, version, plural, cls.__name__, namespaced)


def test_encode_fills_api_version_and_kind() -> None:
    assert api.encode(Pod())["apiVersion"] == "v1"
    assert api.encode(Job())["apiVersion"] == "batch/v1"
    assert api.encode(rbac_v1.Role())["kind"] == "Role"


def test_status_subresource_from_the_spec() -> None:
    assert api.kind_info(Job).status_subresource
    assert not api.kind_info(core_v1.ConfigMap).status_subresource


def test_a_builtin_kind_is_not_a_crd() -> None:
    with pytest.raises(SchemaError, match="built-in kind"):
        api.crd([Job])
    from pyctrl.models.networking_v1 import Ingress  # a dotted group, still no CRD
    with pytest.raises(SchemaError, match="built-in kind"):
        api.crd([Ingress])


# -- decoding -------------------------------------------------------------------------------
def _without_nulls_and_zeros(value: Any) -> Any:
    """The apiserver's JSON minus what encoding omits: nulls and zero-valued defaults."""
    if isinstance(value, Mapping):
        return {k: _without_nulls_and_zeros(v) for k, v in value.items()
                if v is not None and not (v in (0, "") and not isinstance(v, bool))}
    if isinstance(value, list):
        return [_without_nulls_and_zeros(v) for v in value]
    return value


@pytest.mark.parametrize(("name", "cls"), [("job", Job), ("pod", Pod)])
def test_apiserver_json_round_trips(name: str, cls: type[api.Object]) -> None:
    data = _fixture(name)
    obj = msgspec.json.decode(data, type=cls)
    again = msgspec.json.encode(obj)
    assert msgspec.json.decode(again, type=cls) == obj
    assert _without_nulls_and_zeros(orjson.loads(again)) == _without_nulls_and_zeros(
        orjson.loads(data))


def test_decoded_job_reads_typed() -> None:
    job = msgspec.json.decode(_fixture("job"), type=Job)
    container = job.spec.template.spec.containers[0]
    assert container.image == "registry.example.com/ops/backup:1.8.2"
    assert container.resources.limits["memory"] == "256Mi"
    assert container.env[1].value_from is not None
    assert container.env[1].value_from.field_ref is not None
    assert container.env[1].value_from.field_ref.field_path == "metadata.name"
    assert job.status.succeeded == 1
    assert [c.type for c in job.status.conditions] == ["SuccessCriteriaMet", "Complete"]
    assert job.metadata.owner_references[0].kind == "CronJob"
    assert job.spec.template.metadata.creation_timestamp is None


def test_decoded_pod_reads_renamed_and_int_or_string_fields() -> None:
    pod = msgspec.json.decode(_fixture("pod"), type=Pod)
    assert pod.status.pod_ip == "10.244.3.58"
    assert [ip.ip for ip in pod.status.pod_ips] == ["10.244.3.58"]
    assert pod.status.host_ips[0].ip == "10.0.3.17"
    probes = pod.spec.containers[0]
    assert probes.liveness_probe is not None and probes.liveness_probe.http_get is not None
    assert probes.liveness_probe.http_get.port == "http"  # IntOrString, a name
    assert probes.readiness_probe is not None and probes.readiness_probe.http_get is not None
    assert probes.readiness_probe.http_get.port == 8080  # IntOrString, a number
    assert pod.status.container_statuses[0].restart_count == 0


def test_unknown_fields_do_not_break_decoding() -> None:
    raw = orjson.loads(_fixture("pod"))
    newer = copy.deepcopy(raw)
    newer["futureTopLevel"] = {"a": 1}
    newer["spec"]["futureSpecField"] = [1, 2]
    newer["spec"]["containers"][0]["futureContainerField"] = "x"
    newer["status"]["containerStatuses"][0]["state"]["futureState"] = {}
    assert msgspec.json.decode(orjson.dumps(newer), type=Pod) == msgspec.json.decode(
        orjson.dumps(raw), type=Pod)


def test_everything_defaults_when_the_server_omits_it() -> None:
    job = msgspec.json.decode(b"{}", type=Job)
    assert job == Job()
    assert job.spec.template.spec.containers == ()
    assert job.spec.parallelism is None
    assert job.metadata.name == ""
    assert msgspec.json.decode(b'{"spec": {"containers": [{}]}}', type=Pod).spec.containers[
        0].name == ""


def test_api_decode_works_on_a_cached_dict() -> None:
    raw = orjson.loads(_fixture("job"))
    assert api.decode(Job, raw) == msgspec.json.decode(_fixture("job"), type=Job)


def test_empty_map_default_is_shared_and_read_only() -> None:
    a, b = Pod(), Pod()
    assert a.spec.node_selector is b.spec.node_selector
    with pytest.raises(TypeError):
        a.spec.node_selector["x"] = "y"  # type: ignore[index]
    assert msgspec.json.encode(a.spec) == b"{}"


# -- the generator's translation rules ------------------------------------------------------
@pytest.mark.parametrize(("camel", "snake"), [
    ("podIPs", "pod_ips"), ("hostIPC", "host_ipc"), ("setHostnameAsFQDN", "set_hostname_as_fqdn"),
    ("Port", "port"), ("ipv4", "ipv4"), ("from", "from_"), ("continue", "continue_"),
    ("targetWWNs", "target_wwns"), ("x509Cert", "x509_cert"), ("$ref", "ref"),
    ("x-kubernetes-list-type", "x_kubernetes_list_type"), ("bool", "bool_"), ("int", "int_"),
])
def test_snake_names(camel: str, snake: str) -> None:
    assert gen.snake(camel) == snake


@pytest.mark.parametrize(("text", "first"), [
    ("One. Two.", "One."),
    ("Uses a name, e.g. foo. Then more.", "Uses a name, e.g. foo."),
    ("No full stop", "No full stop"),
    ("Spans\n  lines. Next.", "Spans lines."),
    ("Version 1.2 is kept. Rest.", "Version 1.2 is kept."),
])
def test_first_sentence(text: str, first: str) -> None:
    assert gen.first_sentence(text) == first


def test_generated_code_for_keywords_and_special_types(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A synthetic group: a keyword field, a renamed one, IntOrString, Quantity, a required
    struct and a required scalar without defaults, and a docstring ending in a quote."""
    schemas = {k: v for k, v in _snapshot()["schemas"].items() if k.startswith(gen.META)}
    ref = "#/components/schemas/"
    schemas["io.k8s.api.batch.v1.Thing"] = {
        "type": "object", "description": 'A "thing"',
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"},
            "metadata": {"allOf": [{"$ref": f"{ref}{gen.META}.ObjectMeta"}], "default": {}},
            "spec": {"allOf": [{"$ref": f"{ref}io.k8s.api.batch.v1.ThingSpec"}]},
        }}
    schemas["io.k8s.api.batch.v1.ThingSpec"] = {
        "type": "object", "required": ["name"], "properties": {
            "from": {"type": "string"},
            "name": {"type": "string"},
            "podIPs": {"type": "array", "items": {"type": "string"}},
            "port": {"allOf": [{"$ref": f"{ref}{gen.INT_OR_STRING}"}]},
            "limits": {"type": "object", "additionalProperties": {
                "$ref": f"{ref}{gen.QUANTITY}"}},
            "ratio": {"type": "number", "format": "double"},
        }}
    snapshot = {"version": "v0.0.0", "schemas": schemas,
                "modules": {"batch_v1": "batch/v1", "meta_v1": "meta/v1"}, "kinds": {
        "io.k8s.api.batch.v1.Thing": {"plural": "things", "scope": "Cluster", "status": False}}}
    text = gen.generate(snapshot)["batch_v1.py"]
    assert "from_: str | None = None" in text and 'name="podIPs"' in text
    module = ModuleType("thing_batch_v1")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # msgspec resolves hints there
    exec(compile(text, "thing_batch_v1.py", "exec"), module.__dict__)
    thing_cls = module.Thing
    thing = msgspec.json.decode(
        b'{"spec": {"from": "a", "podIPs": ["1.2.3.4"], "port": 80, '
        b'"limits": {"cpu": "1"}, "ratio": 0.5}}', type=thing_cls)
    assert thing.spec.from_ == "a" and thing.spec.pod_ips == ["1.2.3.4"]
    assert thing.spec.port == 80 and thing.spec.limits == {"cpu": "1"}
    assert msgspec.json.decode(b'{"spec": {"port": "http"}}', type=thing_cls).spec.port == "http"
    assert thing_cls().spec.name == ""
    assert orjson.loads(msgspec.json.encode(thing))["spec"]["from"] == "a"
    res = api.resource_for(thing_cls)
    assert (res.group, res.plural, res.namespaced) == ("batch", "things", False)
    assert thing_cls.__doc__ == 'A "thing"'  # the closing quote did not end the docstring
