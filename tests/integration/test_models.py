"""pyctrl.models against the real apiserver (the pinned version the models are generated from):
every generated kind of a served group/version has the Resource discovery serves, every
object the apiserver holds decodes into its model and encodes back to the same object (up
to what encoding omits), and a Job and a Pod the apiserver returns decode, and what they
encode back is accepted by a replace (PUT)."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest

import pyctrl.models
from pyctrl import api
from pyctrl.kube import RESTClient
from pyctrl.models.batch_v1 import Job
from pyctrl.models.core_v1 import Pod
from pyctrl.testing.envtest import ControlPlane

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[2] / "bench" / "fixtures"


def _kinds() -> list[type[api.Object]]:
    found = []
    for info in pkgutil.iter_modules(pyctrl.models.__path__):
        module = importlib.import_module(f"pyctrl.models.{info.name}")
        found += [cls for name in module.__all__ if isinstance(cls := getattr(module, name), type)
                  and issubclass(cls, api.Object) and hasattr(cls, "__kind__")]
    return found


def _discovery(control_plane: ControlPlane, base_path: str
               ) -> dict[str, tuple[str, bool, list[str]]] | None:
    """plural -> (kind, namespaced, verbs) as served at ``base_path``; None when the
    group/version is not served (an alpha or beta one this cluster does not enable)."""
    try:
        doc = json.loads(control_plane.kubectl("get", "--raw", base_path).stdout)
    except subprocess.CalledProcessError:
        return None
    return {r["name"]: (r["kind"], r["namespaced"], r.get("verbs", []))
            for r in doc["resources"]}


def test_every_generated_kind_of_a_served_version_matches_discovery(
        control_plane: ControlPlane) -> None:
    kinds = _kinds()
    assert len(kinds) >= 85
    documents: dict[str, dict[str, tuple[str, bool, list[str]]] | None] = {}
    mismatches, served = [], 0
    for cls in kinds:
        res = api.resource_for(cls)
        if res.base_path not in documents:
            documents[res.base_path] = _discovery(control_plane, res.base_path)
        resources = documents[res.base_path]
        if resources is None:
            assert "alpha" in res.version or "beta" in res.version, res  # GA is served
            continue
        found = resources.get(res.plural)
        if found is None or found[:2] != (res.kind, res.namespaced):
            mismatches.append(f"{cls.__name__}: {res} vs served {found}")
        served += 1
    assert mismatches == []
    assert served >= 60


def _without_defaults(value: Any) -> Any:
    """``value`` minus what typed encoding omits: nulls, zeros, empty strings, false and
    empty lists and maps (recursively), managedFields and selfLink (not in ObjectMeta)."""
    if isinstance(value, Mapping):
        out = {k: _without_defaults(v) for k, v in value.items()
               if k not in ("managedFields", "selfLink")}
        return {k: v for k, v in out.items() if v not in (None, 0, "", False, {}, [])
                or (v is True)}
    if isinstance(value, list):
        return [_without_defaults(v) for v in value]
    return value


def test_every_object_the_apiserver_holds_decodes_and_encodes_back(
        control_plane: ControlPlane, client: RESTClient) -> None:
    """Whatever a fresh control plane holds (namespaces, ConfigMaps, Services, Endpoints and
    EndpointSlices, Leases, ServiceAccounts, ClusterRoles and bindings, FlowSchemas, priority
    levels and classes, APIServices, CRDs, ...): no field is lost or mistyped."""
    documents: dict[str, dict[str, tuple[str, bool, list[str]]] | None] = {}
    decoded: dict[str, int] = {}
    lost = []
    for cls in _kinds():
        res = api.resource_for(cls)
        if res.base_path not in documents:
            documents[res.base_path] = _discovery(control_plane, res.base_path)
        found = (documents[res.base_path] or {}).get(res.plural)
        if found is None or "list" not in found[2]:
            continue
        for item in client.list(res)["items"]:
            obj = msgspec.json.decode(orjson.dumps(item), type=cls)
            again = orjson.loads(msgspec.json.encode(obj))
            want = _without_defaults({**item, "apiVersion": None, "kind": None})
            if _without_defaults(again) != want:
                lost.append(f"{res.kind} {item['metadata'].get('name')}")
            decoded[res.kind] = decoded.get(res.kind, 0) + 1
    assert lost == []
    assert len(decoded) >= 12, decoded
    assert sum(decoded.values()) >= 100, decoded


def _created(control_plane: ControlPlane, name: str, namespace: str) -> dict[str, Any]:
    """The fixture created in ``namespace`` (server-set fields and status dropped)."""
    obj: dict[str, Any] = orjson.loads((FIXTURES / f"{name}.json").read_bytes())
    meta = obj["metadata"]
    obj["metadata"] = {"name": meta["name"], "namespace": namespace,
                       "labels": meta["labels"], "annotations": meta["annotations"]}
    obj.pop("status")
    if name == "job":  # the server generates the selector and its labels
        obj["spec"].pop("selector")
        obj["spec"].pop("manualSelector")
        obj["spec"]["template"]["metadata"]["labels"] = {"app": "backup"}
        obj["metadata"]["labels"] = {"app": "backup"}
    control_plane.kubectl("create", "namespace", namespace, check=False)
    account = obj["spec"].get("serviceAccountName", "")
    if account:  # a Pod's projected token needs its service account
        control_plane.kubectl("create", "serviceaccount", account, "-n", namespace,
                              check=False)
    created = control_plane.kubectl("create", "-f", "-", input=json.dumps(obj), check=False)
    assert created.returncode == 0, created.stderr
    return obj


@pytest.mark.parametrize(("name", "cls", "path"), [
    ("job", Job, "/apis/batch/v1/namespaces/models-job/jobs/backup-29400480"),
    ("pod", Pod, "/api/v1/namespaces/models-pod/pods/web-7d4b9c6f8-x2k9p"),
])
def test_server_objects_decode_and_encode_back(control_plane: ControlPlane, name: str,
                                               cls: type[api.Object], path: str) -> None:
    _created(control_plane, name, f"models-{name}")
    data = control_plane.kubectl("get", "--raw", path).stdout.encode()
    obj = msgspec.json.decode(data, type=cls)
    assert obj.metadata.uid and obj.metadata.resource_version
    assert obj.metadata.creation_timestamp is not None
    assert isinstance(obj, Job | Pod)
    container = (obj.spec.template.spec if isinstance(obj, Job) else obj.spec).containers[0]
    assert container.resources.limits["memory"] in ("256Mi", "512Mi")
    # What the typed object encodes is a valid object for the apiserver (replace = PUT).
    body = msgspec.json.encode(obj).decode()
    replaced = control_plane.kubectl("replace", "-f", "-", input=body, check=False)
    assert replaced.returncode == 0, replaced.stderr
    again = msgspec.json.decode(control_plane.kubectl("get", "--raw", path).stdout.encode(),
                                type=cls)
    assert isinstance(again, Job | Pod) and again.spec == obj.spec
