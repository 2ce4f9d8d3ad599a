"""Applying an owned child never adopts an object its owner did not create
(pyctrl.kube.adoption, through pyctrl.TypedClient.apply, typed or Unstructured): a user's unowned
ConfigMap is refused and keeps no owner reference, unless adopt=True; the steady state costs
one PATCH (the uid precondition), a replaced or deleted object is read again."""

from __future__ import annotations

import pytest

import pyctrl
from pyctrl import api
from pyctrl.errors import AdoptionRefused, AlreadyOwned, TerminalError
from pyctrl.kube import CONFIGMAPS
from pyctrl.kube.adoption import Claims
from pyctrl.models.core_v1 import ConfigMap
from pyctrl.testing import FakeClient, FakeClock


@api.kind("test.pyctrl.io/v1", "Backup")
class Backup(api.Object):
    pass


@pytest.fixture
def fake() -> FakeClient:
    return FakeClient(FakeClock())


def _owner(client: pyctrl.TypedClient, name: str = "nightly") -> Backup:
    return client.create(Backup(metadata=api.ObjectMeta(name=name, namespace="ns")))


def _child(owner: Backup, **data: str) -> ConfigMap:
    return pyctrl.set_controller_reference(owner, ConfigMap(
        metadata=api.ObjectMeta(name="settings", namespace="ns"), data=data or {"k": "ours"}))


def _users_configmap(fake: FakeClient) -> None:
    fake.create(CONFIGMAPS, {"metadata": {"name": "settings", "namespace": "ns"},
                             "data": {"k": "the user's"}}, "ns")


def _verbs(fake: FakeClient) -> list[str]:
    return [a.verb for a in fake.actions]


def test_apply_refuses_to_adopt_a_users_configmap(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    owner = _owner(client)
    _users_configmap(fake)
    with pytest.raises(AdoptionRefused, match=(
            r"ConfigMap 'settings' exists and has no controller: refusing to adopt it by "
            r"Backup 'nightly'.*adopt=True.*\(namespace 'ns'\)")) as err:
        client.apply(_child(owner), "backup", force=True)
    assert isinstance(err.value, AlreadyOwned) and isinstance(err.value, TerminalError)
    assert err.value.owner is None and err.value.claimant is not None
    assert err.value.claimant["uid"] == owner.metadata.uid
    stored = fake.get(CONFIGMAPS, "settings", "ns")
    assert "ownerReferences" not in stored["metadata"]  # the GC can not take it with the owner
    assert stored["data"] == {"k": "the user's"}


def test_an_unstructured_apply_refuses_too(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    owner = _owner(client)
    _users_configmap(fake)
    child = pyctrl.set_controller_reference(owner, pyctrl.Unstructured.of(CONFIGMAPS)(
        {"metadata": {"name": "settings", "namespace": "ns"}, "data": {"k": "ours"}}))
    with pytest.raises(AdoptionRefused, match="'settings'"):
        client.apply(child, "backup", force=True)
    assert "ownerReferences" not in fake.get(CONFIGMAPS, "settings", "ns")["metadata"]


def test_adopt_true_takes_it_over_on_purpose(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    owner = _owner(client)
    _users_configmap(fake)
    adopted = client.apply(_child(owner), "backup", force=True, adopt=True)
    assert pyctrl.is_controlled_by(adopted, owner)


def test_another_controllers_child_is_refused_before_the_write(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    first, second = _owner(client, "first"), _owner(client, "second")
    client.apply(_child(first), "backup", force=True)
    fake.clear_actions()
    with pytest.raises(AlreadyOwned, match="already controlled by Backup 'first'"):
        client.apply(_child(second), "backup", force=True)
    assert _verbs(fake) == ["get"]


def test_the_steady_state_is_one_patch_with_the_uid_precondition(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    owner = _owner(client)
    fake.clear_actions()
    created = client.apply(_child(owner), "backup", force=True)
    assert _verbs(fake) == ["get", "patch"]  # the first apply reads: nothing there
    fake.clear_actions()
    client.apply(_child(owner, k="v2"), "backup", force=True)
    client.apply(_child(owner, k="v3"), "backup", force=True)
    assert _verbs(fake) == ["patch", "patch"]
    assert all(a.object["metadata"]["uid"] == created.metadata.uid for a in fake.actions)


def test_our_object_replaced_by_a_users_is_read_again_and_refused(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    owner = _owner(client)
    client.apply(_child(owner), "backup", force=True)
    fake.delete(CONFIGMAPS, "settings", "ns")
    _users_configmap(fake)  # same name, another object
    with pytest.raises(AdoptionRefused):
        client.apply(_child(owner), "backup", force=True)
    assert "ownerReferences" not in fake.get(CONFIGMAPS, "settings", "ns")["metadata"]


def test_our_object_deleted_is_created_again(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    owner = _owner(client)
    first = client.apply(_child(owner), "backup", force=True)
    fake.delete(CONFIGMAPS, "settings", "ns")
    again = client.apply(_child(owner), "backup", force=True)
    assert again.metadata.uid != first.metadata.uid and pyctrl.is_controlled_by(again, owner)


def test_an_apply_without_a_controller_reference_is_one_plain_patch(fake: FakeClient) -> None:
    _users_configmap(fake)
    fake.clear_actions()
    pyctrl.TypedClient(fake).apply(ConfigMap(
        metadata=api.ObjectMeta(name="settings", namespace="ns"), data={"k": "shared"}),
        "other", force=True)
    assert _verbs(fake) == ["patch"]
    assert "uid" not in fake.actions[0].object["metadata"]


def test_a_callers_uid_is_its_own_precondition(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    owner = _owner(client)
    mine = client.apply(_child(owner), "backup", force=True)
    fake.delete(CONFIGMAPS, "settings", "ns")
    with pytest.raises(pyctrl.errors.Conflict, match="uid mismatch"):
        client.apply(api.replace(_child(owner), metadata=api.replace(
            _child(owner).metadata, uid=mine.metadata.uid)), "backup", force=True)


def test_claims_are_bounded() -> None:
    claims = Claims(size=2)
    for i in range(3):
        claims.remember(("", "configmaps", "ns", f"c{i}", "u"), f"uid{i}")
    assert len(claims) == 2 and claims.get(("", "configmaps", "ns", "c0", "u")) is None
    with pytest.raises(ValueError):
        Claims(size=0)
