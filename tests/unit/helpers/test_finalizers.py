"""Finalizers through the one client: added/removed by a merge patch guarded by
resourceVersion, for typed objects and Unstructured alike; has_finalizer reads every form."""

from __future__ import annotations

import pytest

import pyctrl
from pyctrl import api
from pyctrl.errors import Conflict, NotFound
from pyctrl.kube.resource import CONFIGMAPS
from pyctrl.models.core_v1 import ConfigMap
from pyctrl.testing import FakeClient

NAME = "example.pyctrl.io/cleanup"
FORMS: dict[str, type[ConfigMap] | type[pyctrl.Unstructured]] = {
    "typed": ConfigMap, "unstructured": pyctrl.Unstructured.of(CONFIGMAPS)}


@pytest.fixture
def fake() -> FakeClient:
    return FakeClient()


def stored(fake: FakeClient, cls: type[ConfigMap] | type[pyctrl.Unstructured],
           *finalizers: str) -> pyctrl.Unstructured | ConfigMap:
    fake.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns",
                                          "finalizers": list(finalizers)}})
    return pyctrl.TypedClient(fake).get(cls, "c", "ns")


@pytest.mark.parametrize("form", FORMS)
def test_add_then_remove_by_patch_with_resource_version(fake: FakeClient, form: str) -> None:
    client = pyctrl.TypedClient(fake)
    obj = stored(fake, FORMS[form], "other/keep")
    fake.clear_actions()
    added = client.add_finalizer(obj, NAME)
    [action] = fake.actions
    assert action.verb == "patch" and action.options["patch_type"] == "merge"
    assert action.object == {"metadata": {"finalizers": ["other/keep", NAME],
                                          "resourceVersion": obj.metadata.resource_version}}
    assert type(added) is type(obj)
    assert pyctrl.has_finalizer(added, NAME) and not pyctrl.has_finalizer(obj, NAME)
    removed = client.remove_finalizer(added, NAME)
    assert removed.metadata.finalizers == ["other/keep"]
    assert pyctrl.has_finalizer(fake.get(CONFIGMAPS, "c", "ns"), "other/keep")  # a raw dict


@pytest.mark.parametrize("form", FORMS)
def test_nothing_to_do_makes_no_call(fake: FakeClient, form: str) -> None:
    client = pyctrl.TypedClient(fake)
    obj = stored(fake, FORMS[form], NAME)
    fake.clear_actions()
    assert client.add_finalizer(obj, NAME) is obj
    assert client.remove_finalizer(obj, "absent") is obj
    assert fake.actions == []


@pytest.mark.parametrize("form", FORMS)
def test_stale_object_conflicts_instead_of_dropping_a_finalizer(fake: FakeClient,
                                                                form: str) -> None:
    client = pyctrl.TypedClient(fake)
    stale = stored(fake, FORMS[form])
    client.add_finalizer(stale, "someone/else")
    with pytest.raises(Conflict):
        client.add_finalizer(stale, NAME)
    assert fake.get(CONFIGMAPS, "c", "ns")["metadata"]["finalizers"] == ["someone/else"]


def test_removing_the_last_finalizer_lets_a_deleted_object_go(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    obj = client.add_finalizer(stored(fake, ConfigMap), NAME)
    client.delete(obj)
    terminating = client.get(ConfigMap, "c", "ns")
    assert terminating.metadata.deletion_timestamp is not None
    client.remove_finalizer(terminating, NAME)
    with pytest.raises(NotFound):
        client.get(ConfigMap, "c", "ns")


def test_an_object_never_read_is_refused(fake: FakeClient) -> None:
    with pytest.raises(ValueError, match="resourceVersion"):
        pyctrl.TypedClient(fake).add_finalizer(
            ConfigMap(metadata=api.ObjectMeta(name="c", namespace="ns")), NAME)
