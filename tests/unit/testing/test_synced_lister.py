"""synced_lister is the production cache over a FakeClient: typed objects decoded once per
resourceVersion (the same instance until the object changes), the Builder's indexes (the
controller-uid index an owned lister has), raw dicts for a Resource, and it satisfies
``pyctrl.Lister`` as every lister does."""

from __future__ import annotations

from typing import Any

import pytest

import pyctrl
from pyctrl import CONFIGMAPS, CONTROLLER_UID_INDEX, NotFound
from pyctrl.models.core_v1 import ConfigMap
from pyctrl.testing import FakeClient, synced_lister


def _cm(name: str, owner_uid: str = "") -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "ns", "labels": {"app": name}}
    if owner_uid:
        md["ownerReferences"] = [{"apiVersion": "v1", "kind": "Secret", "name": "s",
                                  "uid": owner_uid, "controller": True}]
    return {"metadata": md, "data": {"k": "v"}}


def test_typed_objects_are_decoded_once_per_resource_version() -> None:
    client = FakeClient()
    client.create(CONFIGMAPS, _cm("a"))
    client.create(CONFIGMAPS, _cm("b"))
    lister: pyctrl.Lister[ConfigMap] = synced_lister(client, ConfigMap)
    first = lister.get("ns", "a")
    assert isinstance(first, ConfigMap) and first.kind == "ConfigMap"
    assert first.api_version == "v1"  # filled, as the typed informer's transform does
    assert lister.get("ns", "a") is first  # unchanged: the cached instance, not a new decode
    other = lister.get("ns", "b")
    stored = client.get(CONFIGMAPS, "a", "ns")
    client.update(CONFIGMAPS, {**stored, "data": {"k": "new"}}, "ns")
    changed = lister.get("ns", "a")
    assert changed is not first and changed.data == {"k": "new"}
    assert lister.get("ns", "b") is other
    assert [c.metadata.name for c in lister.list("ns", {"app": "b"})] == ["b"]
    client.delete(CONFIGMAPS, "b", "ns")
    with pytest.raises(NotFound):
        lister.get("ns", "b")


def test_the_controller_uid_index_is_there_as_on_an_owned_lister() -> None:
    client = FakeClient()
    client.create(CONFIGMAPS, _cm("owned", owner_uid="uid-1"))
    client.create(CONFIGMAPS, _cm("free"))
    typed = synced_lister(client, ConfigMap)
    raw = synced_lister(client, CONFIGMAPS)
    assert [c.metadata.name for c in typed.by_index(CONTROLLER_UID_INDEX, "uid-1")] == ["owned"]
    assert [c["metadata"]["name"] for c in raw.by_index(CONTROLLER_UID_INDEX, "uid-1")] == [
        "owned"]


def test_a_raw_lister_holds_dicts_typed_as_the_factory_does() -> None:
    client = FakeClient()
    client.create(CONFIGMAPS, {**_cm("a"), "metadata": {
        **_cm("a")["metadata"], "managedFields": [{"manager": "x"}]}})
    lister: pyctrl.Lister = synced_lister(client, CONFIGMAPS)
    obj = lister.get("ns", "a")
    assert obj["kind"] == "ConfigMap" and obj["apiVersion"] == "v1"
    assert "managedFields" not in obj["metadata"]
    with pytest.raises(KeyError):  # an index the cache does not have, as an informer's
        lister.by_index("by-name", "a")
    named = synced_lister(client, CONFIGMAPS,
                          indexers={"by-name": lambda o: [o["metadata"]["name"]]})
    assert [o["metadata"]["name"] for o in named.by_index("by-name", "a")] == ["a"]
