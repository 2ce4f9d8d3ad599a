"""pyctrl.Unstructured: JSON content with typed metadata, frozen, bound to a Resource, read
through pyctrl.kube.meta as typed kinds are, decoded by the same msgspec decoders."""

from __future__ import annotations

import dataclasses
import pickle
import threading

import orjson
import pytest

import pyctrl
from pyctrl import api
from pyctrl.kube import CONFIGMAPS, JOBS, meta

ConfigMapU = pyctrl.Unstructured.of(CONFIGMAPS)

CONTENT = {"metadata": {"name": "app", "namespace": "web", "uid": "u-1",
                        "resourceVersion": "7", "labels": {"app": "web"},
                        "managedFields": [{"manager": "kubectl"}],
                        "ownerReferences": [{"apiVersion": "v1", "kind": "Secret",
                                             "name": "s", "uid": "u-0",
                                             "controller": True}]},
           "data": {"k": "v"}}


def test_metadata_is_typed_and_the_rest_kept_as_json() -> None:
    obj = ConfigMapU(CONTENT)
    assert isinstance(obj.metadata, api.ObjectMeta)
    assert (obj.metadata.name, obj.metadata.namespace, obj.metadata.labels) == (
        "app", "web", {"app": "web"})
    assert obj["data"] == {"k": "v"} and obj.get("missing") is None and "data" in obj
    assert (obj.api_version, obj.kind) == ("v1", "ConfigMap")  # filled from the Resource
    assert obj.to_dict() == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "app", "namespace": "web", "uid": "u-1", "resourceVersion": "7",
        "labels": {"app": "web"}, "ownerReferences": [{
            "apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u-0",
            "controller": True}]}, "data": {"k": "v"}}
    assert "metadata" in CONTENT and "apiVersion" not in CONTENT  # the input is only read


def test_meta_reads_it_as_it_reads_a_typed_object() -> None:
    obj: pyctrl.Object = ConfigMapU(CONTENT)
    assert (meta.name(obj), meta.namespace(obj), meta.uid(obj), meta.resource_version(obj),
            meta.api_version(obj), meta.kind(obj)) == ("app", "web", "u-1", "7", "v1",
                                                        "ConfigMap")
    assert meta.controller_ref(obj) == meta.OwnerRef("v1", "Secret", "s", "u-0")
    assert pyctrl.is_controlled_by(obj, "u-0")


def test_it_is_frozen_and_replace_builds_a_changed_copy() -> None:
    obj = ConfigMapU(CONTENT)
    with pytest.raises(AttributeError):
        setattr(obj, "x", 1)  # noqa: B010
    with pytest.raises(TypeError):
        obj.body["data"] = {}  # type: ignore[index]
    changed = api.replace(obj, metadata=api.replace(obj.metadata, name="other"), data=None,
                          binaryData={"b": "AA=="})
    assert type(changed) is ConfigMapU
    assert changed.metadata.name == "other" and "data" not in changed
    assert changed["binaryData"] == {"b": "AA=="}
    assert obj.metadata.name == "app" and obj["data"] == {"k": "v"}
    assert changed != obj and ConfigMapU(obj.to_dict()) == obj
    assert pickle.loads(pickle.dumps(obj)) == obj


def test_bound_classes_are_one_per_resource_and_give_their_resource() -> None:
    assert pyctrl.Unstructured.of(CONFIGMAPS) is ConfigMapU
    assert api.resource_for(ConfigMapU) == CONFIGMAPS
    assert api.resource_for(pyctrl.Unstructured.of(JOBS)) == JOBS
    with pytest.raises(api.SchemaError, match=r"Unstructured\.of"):
        api.resource_for(pyctrl.Unstructured)


def test_it_decodes_through_the_msgspec_decoders() -> None:
    raw = b'{"metadata":{"name":"j","creationTimestamp":"2026-01-02T03:04:05Z"},"spec":{}}'
    job = api.decode(pyctrl.Unstructured.of(JOBS), raw)
    assert job.metadata.creation_timestamp is not None and job["spec"] == {}
    assert (job.api_version, job.kind) == ("batch/v1", "Job")
    assert api.decode(ConfigMapU, CONTENT) == ConfigMapU(CONTENT)


@pytest.mark.parametrize("raw", [b'[1]', b'{"metadata":{"name":3}}',
                                 b'{"metadata":"x"}'])
def test_content_that_is_not_an_object_with_metadata_is_a_decode_error(raw: bytes) -> None:
    with pytest.raises(api.DecodeError):
        api.decode(ConfigMapU, raw)
    with pytest.raises(api.UnstructuredDecodeError):
        ConfigMapU.from_json(orjson.loads(raw))


def test_nested_reads_are_typed_and_name_a_wrong_type() -> None:
    job = pyctrl.Unstructured.of(JOBS)({"metadata": {"name": "j"}, "spec": {
        "parallelism": 2, "suspend": False, "template": {"spec": {"containers": [
            {"name": "c", "image": "busybox"}]}}, "selector": None}})
    assert job.nested_int("spec", "parallelism") == 2
    assert job.nested_bool("spec", "suspend") is False
    assert job.nested_map("spec", "template") == {"spec": {"containers": [
        {"name": "c", "image": "busybox"}]}}
    assert job.nested_list("spec", "template", "spec", "containers") == (
        {"name": "c", "image": "busybox"},)
    assert job.nested_str("spec", "missing") is None
    assert job.nested("spec", "selector", "matchLabels") is None  # a null step: missing
    assert job.nested("status", "active") is None
    with pytest.raises(TypeError, match=r"spec\.parallelism is int, expected str"):
        job.nested_str("spec", "parallelism")
    with pytest.raises(TypeError, match="is bool, expected int"):
        job.nested_int("spec", "suspend")
    with pytest.raises(TypeError, match=r"spec\.parallelism is int, expected an object"):
        job.nested("spec", "parallelism", "x")
    with pytest.raises(TypeError):
        job.nested_map("spec", "template")["spec"] = {}  # type: ignore[index]


def test_threads_binding_one_resource_at_once_get_one_class() -> None:
    resource = dataclasses.replace(JOBS, plural="racejobs", kind="RaceJob")
    start = threading.Barrier(8)
    got: list[type[pyctrl.Unstructured]] = []

    def bind() -> None:
        start.wait()
        got.append(pyctrl.Unstructured.of(resource))

    threads = [threading.Thread(target=bind) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len(set(got)) == 1
