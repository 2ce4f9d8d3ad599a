"""Owner references: controller_of, is_controlled_by, set_controller_reference."""

from __future__ import annotations

import copy

import pytest

from pyctrl.kube.interface import Object
from pyctrl.kube.resource import CONFIGMAPS, SECRETS
from pyctrl.ownerrefs import (
    AlreadyOwned,
    controller_of,
    is_controlled_by,
    set_controller_reference,
)
from pyctrl.testing import FakeClient


@pytest.fixture
def client() -> FakeClient:
    return FakeClient()


def test_set_controller_reference_makes_owner_the_controller(client: FakeClient) -> None:
    owner = client.create(CONFIGMAPS, {"metadata": {"name": "cm", "namespace": "ns"}})
    secret: Object = {"metadata": {"name": "s", "namespace": "ns"}}
    set_controller_reference(owner, secret)
    stored = client.create(SECRETS, secret)
    assert is_controlled_by(stored, owner)
    assert controller_of(stored) == {
        "apiVersion": "v1", "kind": "ConfigMap", "name": "cm",
        "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def test_setting_the_same_owner_twice_keeps_one_reference(client: FakeClient) -> None:
    owner = client.create(CONFIGMAPS, {"metadata": {"name": "cm", "namespace": "ns"}})
    other = {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u-p"}
    secret: Object = {"metadata": {"name": "s", "namespace": "ns", "ownerReferences": [other]}}
    set_controller_reference(owner, secret)
    set_controller_reference(owner, secret, block_owner_deletion=False)
    refs = secret["metadata"]["ownerReferences"]
    assert len(refs) == 2 and refs[0] == other
    assert refs[1]["blockOwnerDeletion"] is False


def test_another_controller_is_not_replaced(client: FakeClient) -> None:
    first = client.create(CONFIGMAPS, {"metadata": {"name": "first", "namespace": "ns"}})
    second = client.create(CONFIGMAPS, {"metadata": {"name": "second", "namespace": "ns"}})
    secret: Object = {"metadata": {"name": "s", "namespace": "ns"}}
    set_controller_reference(first, secret)
    before = copy.deepcopy(secret)
    with pytest.raises(AlreadyOwned, match="first"):
        set_controller_reference(second, secret)
    assert secret == before
    assert is_controlled_by(secret, first) and not is_controlled_by(secret, second)


def test_owner_scope_and_identity_are_checked(client: FakeClient) -> None:
    owner = client.create(CONFIGMAPS, {"metadata": {"name": "cm", "namespace": "ns"}})
    with pytest.raises(ValueError, match="another namespace"):
        set_controller_reference(owner, {"metadata": {"name": "s", "namespace": "other"}})
    with pytest.raises(ValueError, match="cluster-scoped"):
        set_controller_reference(owner, {"metadata": {"name": "node"}})
    listed = {"metadata": owner["metadata"]}  # a LIST item without apiVersion/kind
    with pytest.raises(ValueError, match="apiVersion, kind"):
        set_controller_reference(listed, {"metadata": {"name": "s", "namespace": "ns"}})


def test_objects_without_controller() -> None:
    obj: Object = {"metadata": {"name": "x", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}]}}
    assert controller_of(obj) is None
    assert not is_controlled_by(obj, {"metadata": {"uid": "u"}})
    assert not is_controlled_by({"metadata": {}}, {"metadata": {}})
