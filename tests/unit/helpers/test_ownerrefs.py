"""Owner references: controller_of, is_controlled_by, set_controller_reference, written once
for every pyctrl.Object (typed kinds and Unstructured alike)."""

from __future__ import annotations

import pytest

import pyctrl
from pyctrl import api
from pyctrl.kube.interface import RawObject
from pyctrl.kube.resource import CONFIGMAPS, SECRETS
from pyctrl.models.core_v1 import ConfigMap, Secret
from pyctrl.ownerrefs import (
    AlreadyOwned,
    controller_of,
    is_controlled_by,
    owner_reference,
    set_controller_reference,
)
from pyctrl.testing import FakeClient

SecretU = pyctrl.Unstructured.of(SECRETS)


@pytest.fixture
def client() -> pyctrl.TypedClient:
    return pyctrl.TypedClient(FakeClient())


def owner(client: pyctrl.TypedClient, name: str = "cm") -> ConfigMap:
    return client.create(ConfigMap(metadata=api.ObjectMeta(name=name, namespace="ns")))


def secret(**md: object) -> Secret:
    return Secret(metadata=api.ObjectMeta(name="s", namespace="ns", **md))  # type: ignore[arg-type]


@pytest.mark.parametrize("form", ["typed", "unstructured"])
def test_set_controller_reference_makes_owner_the_controller(
        client: pyctrl.TypedClient, form: str) -> None:
    cm = owner(client)
    child: Secret | pyctrl.Unstructured = (
        secret() if form == "typed" else SecretU({"metadata": {"name": "s", "namespace": "ns"}}))
    owned = set_controller_reference(cm, child)
    assert type(owned) is type(child) and child.metadata.owner_references == []  # a copy
    stored = client.create(owned)
    assert is_controlled_by(stored, cm)
    assert controller_of(stored) == api.OwnerReference(
        api_version="v1", kind="ConfigMap", name="cm", uid=cm.metadata.uid, controller=True,
        block_owner_deletion=True)


def test_setting_the_same_owner_twice_keeps_one_reference(client: pyctrl.TypedClient) -> None:
    cm = owner(client)
    other = api.OwnerReference(api_version="v1", kind="Pod", name="p", uid="u-p")
    once = set_controller_reference(cm, secret(owner_references=[other]))
    twice = set_controller_reference(cm, once, block_owner_deletion=False)
    refs = twice.metadata.owner_references
    assert len(refs) == 2 and refs[0] == other
    assert refs[1].block_owner_deletion is False


def test_another_controller_is_not_replaced(client: pyctrl.TypedClient) -> None:
    first, second = owner(client, "first"), owner(client, "second")
    owned = set_controller_reference(first, secret())
    with pytest.raises(AlreadyOwned, match="first") as err:
        set_controller_reference(second, owned)
    assert err.value.claimant is not None and err.value.claimant["name"] == "second"
    assert is_controlled_by(owned, first) and not is_controlled_by(owned, second)


def test_owner_scope_and_identity_are_checked(client: pyctrl.TypedClient) -> None:
    cm = owner(client)
    with pytest.raises(ValueError, match="another namespace"):
        set_controller_reference(cm, Secret(metadata=api.ObjectMeta(name="s", namespace="o")))
    with pytest.raises(ValueError, match="cluster-scoped"):
        set_controller_reference(cm, Secret(metadata=api.ObjectMeta(name="node")))
    listed: RawObject = {"metadata": {"name": "cm", "namespace": "ns", "uid": "u"}}
    with pytest.raises(ValueError, match="apiVersion, kind"):  # a raw LIST item
        set_controller_reference(listed, secret())
    raw_owner = client.raw.get(CONFIGMAPS, "cm", "ns")  # a raw owner is read as well
    assert owner_reference(raw_owner) == owner_reference(cm)


def test_objects_without_controller() -> None:
    obj: RawObject = {"metadata": {"name": "x", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}]}}
    assert controller_of(obj) is None
    assert not is_controlled_by(obj, {"metadata": {"uid": "u"}})
    assert not is_controlled_by({"metadata": {}}, {"metadata": {}})
    assert not is_controlled_by(secret(), "")
