"""pyctrl.api.typed: typed reads of cached dicts, status write-back as a merge patch."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import pytest

from pyctrl import api
from pyctrl.testing import FakeClient
from tests.unit.api.sample_kinds import Cluster, Website

ROOT = Path(__file__).resolve().parents[3]


def raw() -> dict[str, Any]:
    return {"apiVersion": "web.pyctrl.io/v1", "kind": "Website",
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7",
                         "generation": 2, "labels": {"x": "y"},
                         "creationTimestamp": "2026-11-26T08:00:00Z",
                         "managedFields": [{"manager": "m"}]},
            "spec": {"host": "example.com", "image": "nginx", "replicas": 3,
                     "futureField": {"kept": True},
                     "routes": [{"path": "/", "port": 80}]},
            "status": {"url": "http://example.com", "newerControllerField": "keep me",
                       "conditions": [{"type": "Ready", "status": "True", "reason": "Up",
                                       "message": "", "lastTransitionTime":
                                       "2026-11-26T08:00:00Z"}]}}


def test_resource_for_a_kind() -> None:
    res = api.resource_for(Website)
    assert (res.group, res.version, res.plural, res.kind, res.namespaced) == (
        "web.pyctrl.io", "v1", "websites", "Website", True)
    assert api.resource_for(Cluster).namespaced is False


def test_decode_reads_without_changing_the_cached_dict() -> None:
    cached = raw()
    before = copy.deepcopy(cached)
    site = api.decode(Website, cached)
    assert cached == before
    assert site.spec.replicas == 3 and site.spec.routes[0].path == "/"
    assert site.metadata.labels == {"x": "y"} and site.metadata.generation == 2
    assert site.metadata.creation_timestamp == datetime(2026, 11, 26, 8, tzinfo=UTC)
    assert site.status.conditions[0].reason == "Up"
    assert site.spec.tier == "free"  # default
    site.metadata.labels["x"] = "changed"  # a fresh object: the cache is untouched
    site.status.conditions.clear()
    assert cached == before


def test_decode_error_names_the_object_and_field() -> None:
    bad = raw()
    bad["spec"]["replicas"] = "three"
    with pytest.raises(api.DecodeError, match=r"Website ns/a: .*spec\.replicas"):
        api.decode(Website, bad)


def test_encode_fills_api_version_and_kind_and_omits_defaults() -> None:
    site = Website(spec=api.decode(Website, raw()).spec)
    out = api.encode(site)
    assert out["apiVersion"] == "web.pyctrl.io/v1" and out["kind"] == "Website"
    assert "tier" not in out["spec"] and out["spec"]["replicas"] == 3
    assert out["status"] == {}  # every status field at its default
    assert out["spec"]["routes"] == [{"path": "/"}]  # port 80 is the default: omitted


def test_status_patch_touches_only_declared_changed_fields() -> None:
    cached = raw()
    site = api.decode(Website, cached)
    status = api.replace(site.status, replicas=3, url="",  # url back to its default: removed
                         observed_generation=site.metadata.generation)
    patch = api.status_patch(cached, status)
    assert patch == {"status": {"observedGeneration": 2, "replicas": 3, "url": None}}
    # A field this class does not declare is not in the patch: it survives the write.
    assert "newerControllerField" not in patch["status"]


def test_unchanged_status_gives_an_empty_patch() -> None:
    cached = raw()
    assert api.status_patch(cached, api.decode(Website, cached).status) == {}


def test_status_patch_with_a_resource_version_precondition() -> None:
    cached = raw()
    site = api.decode(Website, cached)
    patch = api.status_patch(cached, api.replace(site.status, replicas=1), resource_version="7")
    assert patch["metadata"] == {"resourceVersion": "7"}


def test_status_patch_applied_keeps_unknown_fields() -> None:
    client = FakeClient()
    res = api.resource_for(Website)
    new = raw()
    del new["metadata"]["resourceVersion"]
    client.create(res, new, "ns")  # status is dropped on create, as the apiserver does
    client.patch(res, "a", {"status": raw()["status"]}, "ns", patch_type="merge",
                 subresource="status")
    cached = client.get(res, "a", "ns")
    status = api.replace(api.decode(Website, cached).status, replicas=2)
    client.patch(res, "a", api.status_patch(cached, status), "ns", patch_type="merge",
                 subresource="status")
    stored = client.get(res, "a", "ns")
    assert stored["status"]["replicas"] == 2
    assert stored["status"]["newerControllerField"] == "keep me"
    assert stored["spec"]["futureField"] == {"kept": True}


def test_merge_patch_nested_and_removed() -> None:
    old = {"a": {"b": 1, "c": 2}, "d": [1], "e": 1}
    new = {"a": {"b": 1, "c": 3}, "d": [1, 2]}
    assert api.merge_patch(old, new) == {"a": {"c": 3}, "d": [1, 2], "e": None}
    assert api.merge_patch(old, new, frozenset({"a", "d"})) == {"a": {"c": 3}, "d": [1, 2]}


_RACE = '''
import sys, threading
from typing import Annotated, Any
from pyctrl import api
sys.setswitchinterval(1e-6)

class Ref(api.Struct):
    name: str = ""
    uid: str = ""

class Status(api.Struct):
    refs: list[Ref] = api.field(default_factory=list)
    conditions: list[api.Condition] = api.field(default_factory=list)

@api.kind("race.example.com/v1", "Racer")
class Racer(api.Object):
    spec: dict[str, Any] = api.field(default_factory=dict)
    status: Status = api.field(default_factory=Status)

raw = {"metadata": {"name": "a", "ownerReferences": [
           {"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u", "controller": True}]},
       "status": {"refs": [{"name": "r"}], "conditions": [
           {"type": "Ready", "status": "True", "reason": "R", "message": "",
            "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}
barrier = threading.Barrier(8)

def work() -> None:
    barrier.wait()
    for _ in range(20):
        api.decode(Racer, raw)
        api.convert(list[api.Condition], raw["status"]["conditions"])

threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
'''


def test_first_decodes_from_many_threads_at_once_do_not_crash() -> None:
    # msgspec builds a type's decoding info on first use; eight threads doing that at once
    # crashed the interpreter (a controller's workers on their first reconciles). A fresh
    # interpreter and fresh classes, so the first use really is concurrent.
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", _RACE], capture_output=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]


def test_a_required_marked_field_is_required_by_the_schema_yet_decodes_when_absent() -> None:
    """``api.Required``: the CRD refuses an object without the field, but one already stored
    without it (a laxer schema) decodes with the default instead of failing a typed cache."""

    class Spec(api.Struct):
        name: Annotated[str, api.Required, api.MinLength(1)] = ""
        size: int = 1

    schema = api.type_schema(Spec)
    assert schema["required"] == ["name"]
    assert "default" not in schema["properties"]["name"]
    assert schema["properties"]["size"]["default"] == 1
    assert api.decode(Spec, {"size": 2}) == Spec(name="", size=2)
