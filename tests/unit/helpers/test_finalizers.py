"""Finalizers: added/removed by a merge patch guarded by resourceVersion."""

from __future__ import annotations

import pytest

from pyctrl.errors import Conflict, NotFound
from pyctrl.finalizers import add_finalizer, has_finalizer, remove_finalizer
from pyctrl.kube.resource import CONFIGMAPS
from pyctrl.testing import FakeClient

NAME = "example.pyctrl.io/cleanup"


@pytest.fixture
def client() -> FakeClient:
    return FakeClient()


def test_add_then_remove_by_patch_with_resource_version(client: FakeClient) -> None:
    obj = client.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns",
                                                  "finalizers": ["other/keep"]}})
    client.clear_actions()
    added = add_finalizer(client, CONFIGMAPS, obj, NAME)
    [action] = client.actions
    assert action.verb == "patch" and action.options["patch_type"] == "merge"
    assert action.object == {"metadata": {"finalizers": ["other/keep", NAME],
                                          "resourceVersion": obj["metadata"]["resourceVersion"]}}
    assert has_finalizer(added, NAME) and not has_finalizer(obj, NAME)  # obj untouched
    removed = remove_finalizer(client, CONFIGMAPS, added, NAME)
    assert removed["metadata"]["finalizers"] == ["other/keep"]


def test_nothing_to_do_makes_no_call(client: FakeClient) -> None:
    obj = client.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns",
                                                  "finalizers": [NAME]}})
    client.clear_actions()
    assert add_finalizer(client, CONFIGMAPS, obj, NAME) is obj
    assert remove_finalizer(client, CONFIGMAPS, obj, "absent") is obj
    assert client.actions == []


def test_stale_object_conflicts_instead_of_dropping_a_finalizer(client: FakeClient) -> None:
    stale = client.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns"}})
    add_finalizer(client, CONFIGMAPS, stale, "someone/else")
    with pytest.raises(Conflict):
        add_finalizer(client, CONFIGMAPS, stale, NAME)
    assert client.get(CONFIGMAPS, "c", "ns")["metadata"]["finalizers"] == ["someone/else"]


def test_removing_the_last_finalizer_lets_a_deleted_object_go(client: FakeClient) -> None:
    obj = client.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns"}})
    obj = add_finalizer(client, CONFIGMAPS, obj, NAME)
    client.delete(CONFIGMAPS, "c", "ns")
    terminating = client.get(CONFIGMAPS, "c", "ns")
    assert terminating["metadata"].get("deletionTimestamp")
    remove_finalizer(client, CONFIGMAPS, terminating, NAME)
    with pytest.raises(NotFound):
        client.get(CONFIGMAPS, "c", "ns")
