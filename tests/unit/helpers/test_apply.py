"""create_or_update (controllerutil.CreateOrUpdate) on the one client, for typed objects and
Unstructured: created/unchanged/updated, the resourceVersion lock, and no silent adoption."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import pyctrl
from pyctrl import api
from pyctrl.errors import AdoptionRefused, AlreadyOwned, Conflict
from pyctrl.kube.resource import CONFIGMAPS
from pyctrl.models.core_v1 import ConfigMap, Secret
from pyctrl.testing import FakeClient

ConfigMapU = pyctrl.Unstructured.of(CONFIGMAPS)


@pytest.fixture
def fake() -> FakeClient:
    return FakeClient()


def named() -> ConfigMap:
    return ConfigMap(metadata=api.ObjectMeta(name="c", namespace="ns"))


def set_data(value: str) -> Callable[[ConfigMap], ConfigMap]:
    def mutate(obj: ConfigMap) -> ConfigMap:
        return api.replace(obj, data={"k": value})
    return mutate


def verbs(fake: FakeClient) -> list[str]:
    return [a.verb for a in fake.actions]


def test_created_then_unchanged_then_updated(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    obj, result = pyctrl.create_or_update(client, named(), set_data("1"))
    assert result == "created" and obj.metadata.uid and obj.data == {"k": "1"}
    assert verbs(fake) == ["get", "create"]
    fake.clear_actions()
    again, result = pyctrl.create_or_update(client, named(), set_data("1"))
    assert result == "unchanged" and again == obj and verbs(fake) == ["get"]
    fake.clear_actions()
    _, result = pyctrl.create_or_update(client, named(), set_data("2"))
    assert result == "updated" and verbs(fake) == ["get", "update"]
    assert fake.get(CONFIGMAPS, "c", "ns")["data"] == {"k": "2"}


def test_mutate_sees_the_existing_object_unstructured_too(fake: FakeClient) -> None:
    fake.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns",
                                          "labels": {"keep": "me"}}, "data": {"a": "1"}})

    def add_key(obj: pyctrl.Unstructured) -> pyctrl.Unstructured:
        return obj.replace(data={**(obj.nested_map("data") or {}), "b": "2"})

    _, result = pyctrl.create_or_update(
        pyctrl.TypedClient(fake), ConfigMapU({"metadata": {"name": "c", "namespace": "ns"}}),
        add_key)
    assert result == "updated"
    stored = fake.get(CONFIGMAPS, "c", "ns")
    assert stored["data"] == {"a": "1", "b": "2"}
    assert stored["metadata"]["labels"] == {"keep": "me"}


def test_renaming_in_mutate_and_concurrent_writes_are_errors(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)

    def rename(obj: ConfigMap) -> ConfigMap:
        return api.replace(obj, metadata=api.replace(obj.metadata, name="other"))

    with pytest.raises(ValueError, match="name or namespace"):
        pyctrl.create_or_update(client, named(), rename)
    fake.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns"}})

    def racing(obj: ConfigMap) -> ConfigMap:
        theirs = fake.get(CONFIGMAPS, "c", "ns")  # someone else writes meanwhile
        fake.update(CONFIGMAPS, {**theirs, "data": {"by": "someone"}}, "ns")
        return api.replace(obj, data={"k": "mine"})

    with pytest.raises(Conflict):
        pyctrl.create_or_update(client, named(), racing)
    assert fake.get(CONFIGMAPS, "c", "ns")["data"] == {"by": "someone"}


def owned_by(owner: Secret) -> Callable[[ConfigMap], ConfigMap]:
    def mutate(obj: ConfigMap) -> ConfigMap:
        return api.replace(pyctrl.set_controller_reference(owner, obj), data={"k": "ours"})
    return mutate


def test_an_unowned_object_is_not_adopted_unless_asked(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    owner = client.create(Secret(metadata=api.ObjectMeta(name="s", namespace="ns")))
    fake.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "ns"},
                             "data": {"k": "the user's"}})
    fake.clear_actions()
    with pytest.raises(AdoptionRefused, match="ConfigMap 'c' exists and has no controller"):
        pyctrl.create_or_update(client, named(), owned_by(owner))
    assert verbs(fake) == ["get"]  # nothing written
    assert fake.get(CONFIGMAPS, "c", "ns")["data"] == {"k": "the user's"}
    adopted, result = pyctrl.create_or_update(client, named(), owned_by(owner), adopt=True)
    assert result == "updated" and pyctrl.is_controlled_by(adopted, owner)
    _, result = pyctrl.create_or_update(client, named(), owned_by(owner))  # ours now
    assert result == "unchanged"


def test_a_missing_object_is_created_owned(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    owner = client.create(Secret(metadata=api.ObjectMeta(name="s", namespace="ns")))
    created, result = pyctrl.create_or_update(client, named(), owned_by(owner))
    assert result == "created" and pyctrl.is_controlled_by(created, owner)


def test_another_controllers_object_is_refused_however_mutate_sets_the_reference(
        fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    first = client.create(Secret(metadata=api.ObjectMeta(name="a", namespace="ns")))
    second = client.create(Secret(metadata=api.ObjectMeta(name="b", namespace="ns")))
    pyctrl.create_or_update(client, named(), owned_by(first))

    def overwrite_refs(obj: ConfigMap) -> ConfigMap:  # no set_controller_reference check
        ref = pyctrl.owner_reference(second)
        return api.replace(obj, metadata=api.replace(obj.metadata, owner_references=[ref]))

    with pytest.raises(AlreadyOwned, match="already controlled by Secret 'a'"):
        pyctrl.create_or_update(client, named(), overwrite_refs)
    with pytest.raises(AlreadyOwned):
        pyctrl.create_or_update(client, named(), owned_by(second))
    assert pyctrl.is_controlled_by(client.get(ConfigMap, "c", "ns"), first)
