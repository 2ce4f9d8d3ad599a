"""pyctrl.models against the real apiserver (the pinned version the models are generated from):
every generated kind's Resource is what discovery serves, and a Job and a Pod the apiserver
returns decode, and what they encode back is accepted by a replace (PUT)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest

from pyctrl import api
from pyctrl.models import apps_v1, batch_v1, coordination_v1, core_v1, networking_v1, rbac_v1
from pyctrl.models.batch_v1 import Job
from pyctrl.models.core_v1 import Pod
from pyctrl.testing.envtest import ControlPlane

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[2] / "bench" / "fixtures"

KIND_MODULES = (apps_v1, batch_v1, coordination_v1, core_v1, networking_v1, rbac_v1)


def _kinds() -> list[type[api.Object]]:
    return [cls for module in KIND_MODULES for name in module.__all__
            if isinstance(cls := getattr(module, name), type) and issubclass(cls, api.Object)]


def test_every_generated_kind_matches_discovery(control_plane: ControlPlane) -> None:
    kinds = _kinds()
    assert len(kinds) == 21
    documents: dict[str, dict[str, tuple[str, bool]]] = {}
    mismatches = []
    for cls in kinds:
        res = api.resource_for(cls)
        if res.base_path not in documents:
            doc = json.loads(control_plane.kubectl("get", "--raw", res.base_path).stdout)
            documents[res.base_path] = {r["name"]: (r["kind"], r["namespaced"])
                                        for r in doc["resources"]}
        served = documents[res.base_path].get(res.plural)
        if served != (res.kind, res.namespaced):
            mismatches.append(f"{cls.__name__}: {res} vs served {served}")
    assert mismatches == []


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
