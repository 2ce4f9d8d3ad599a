"""create_or_update (controllerutil.CreateOrUpdate) and the server-side apply helper."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pyctrl.apply import apply, create_or_update
from pyctrl.errors import Conflict
from pyctrl.kube.interface import Object
from pyctrl.kube.resource import CONFIGMAPS
from pyctrl.testing import FakeClient


@pytest.fixture
def client() -> FakeClient:
    return FakeClient()


def set_data(value: str) -> Callable[[Object], None]:
    def mutate(obj: Object) -> None:
        obj["data"] = {"k": value}
    return mutate


def verbs(client: FakeClient) -> list[str]:
    return [a.verb for a in client.actions]


def test_created_then_unchanged_then_updated(client: FakeClient) -> None:
    obj: Object = {"metadata": {"name": "c", "namespace": "ns"}}
    assert create_or_update(client, CONFIGMAPS, obj, set_data("1")) == "created"
    assert obj["metadata"]["uid"] and obj["data"] == {"k": "1"}  # obj is the stored object
    assert verbs(client) == ["get", "create"]
    client.clear_actions()
    again: Object = {"metadata": {"name": "c", "namespace": "ns"}}
    assert create_or_update(client, CONFIGMAPS, again, set_data("1")) == "unchanged"
    assert verbs(client) == ["get"]
    assert again == client.get(CONFIGMAPS, "c", "ns")
    client.clear_actions()
    assert create_or_update(client, CONFIGMAPS, again, set_data("2")) == "updated"
    assert verbs(client) == ["get", "update"]
    assert client.get(CONFIGMAPS, "c", "ns")["data"] == {"k": "2"}


def test_mutate_sees_the_existing_object(client: FakeClient) -> None:
    client.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns",
                                            "labels": {"keep": "me"}}, "data": {"a": "1"}})

    def add_key(obj: Object) -> None:
        obj["data"]["b"] = "2"

    obj: Object = {"metadata": {"name": "c", "namespace": "ns"}}
    assert create_or_update(client, CONFIGMAPS, obj, add_key) == "updated"
    stored = client.get(CONFIGMAPS, "c", "ns")
    assert stored["data"] == {"a": "1", "b": "2"} and stored["metadata"]["labels"] == {
        "keep": "me"}


def test_renaming_in_mutate_and_concurrent_writes_are_errors(client: FakeClient) -> None:
    def rename(obj: Object) -> None:
        obj["metadata"]["name"] = "other"

    with pytest.raises(ValueError, match="name or namespace"):
        create_or_update(client, CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns"}},
                         rename)
    client.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns"}})

    def racing(obj: Object) -> None:
        theirs = client.get(CONFIGMAPS, "c", "ns")  # someone else writes meanwhile
        client.update(CONFIGMAPS, {**theirs, "data": {"by": "someone"}}, "ns")
        obj["data"] = {"k": "mine"}

    with pytest.raises(Conflict):
        create_or_update(client, CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns"}},
                         racing)
    assert client.get(CONFIGMAPS, "c", "ns")["data"] == {"by": "someone"}


def test_apply_sends_an_apply_patch_with_field_manager(client: FakeClient) -> None:
    desired: Object = {"metadata": {"name": "c", "namespace": "ns", "resourceVersion": "9",
                                    "managedFields": [{}]}, "data": {"k": "v"}}
    stored = apply(client, CONFIGMAPS, desired, "my-controller", force=True)
    assert stored["data"] == {"k": "v"} and stored["metadata"]["uid"]
    [action] = [a for a in client.actions if a.verb == "patch"]
    assert action.options == {"patch_type": "apply", "field_manager": "my-controller",
                              "force": True}
    assert action.object == {"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "c", "namespace": "ns"}, "data": {"k": "v"}}
    assert desired["metadata"]["resourceVersion"] == "9"  # the caller's object is untouched
    with pytest.raises(ValueError):
        apply(client, CONFIGMAPS, desired, "")
