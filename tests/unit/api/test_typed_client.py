"""pyctrl.api.TypedClient: the client's verbs on kind classes, typed answers, the status diff
write with its resourceVersion lock, server-side apply of partial objects; typed owner
references."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import pyctrl
from pyctrl import api
from pyctrl.errors import AlreadyOwned, Conflict, NotFound
from pyctrl.kube import Resource
from pyctrl.kube.forwarding import ForwardingClient
from pyctrl.testing import FakeClient, FakeClock


class WidgetSpec(api.Struct):
    size: int = 1
    paused: bool | None = None
    replicas: int | None = None
    tags: list[str] = api.field(default_factory=list)


class WidgetStatus(api.Struct):
    ready: int | None = None
    phase: str = ""
    active: list[str] = api.field(default_factory=list)
    observed_generation: int | None = None


@api.kind("test.pyctrl.io/v1", "Widget")
class Widget(api.Object):
    spec: WidgetSpec = api.field(default_factory=WidgetSpec)
    status: WidgetStatus = api.field(default_factory=WidgetStatus)


@api.kind("v1", "ConfigMap", status_subresource=False, builtin=True)
class ConfigMap(api.Object):
    data: dict[str, str] | None = None


WIDGETS = api.resource_for(Widget)


def widget(name: str = "w", **spec: Any) -> Widget:
    return Widget(metadata=api.ObjectMeta(name=name, namespace="ns"), spec=WidgetSpec(**spec))


@pytest.fixture
def fake() -> FakeClient:
    return FakeClient(FakeClock())


def test_crud_by_class_and_instance_returns_typed_objects(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    created = client.create(widget(size=3))
    assert isinstance(created, Widget) and created.metadata.uid
    assert created.api_version == "test.pyctrl.io/v1" and created.spec.size == 3
    got: Widget = client.get(Widget, "w", "ns")
    assert got == created
    updated = client.update(api.replace(got, spec=api.replace(got.spec, size=4)))
    assert updated.spec.size == 4 and updated.metadata.generation == 2
    client.create(widget("x"))
    assert [w.metadata.name for w in client.list(Widget, "ns")] == ["w", "x"]
    patched = client.patch(Widget, "x", {"spec": {"tags": ["a"]}}, "ns", patch_type="merge")
    assert patched.spec.tags == ["a"]
    deleted = client.delete(Widget, "x", "ns")
    assert deleted is not None and deleted.metadata.name == "x"
    client.delete(updated)
    assert client.list(Widget, "ns") == []
    with pytest.raises(NotFound):
        client.get(Widget, "w", "ns")
    # Raw-dict calls keep working, on the raw client.
    assert client.raw.list(WIDGETS, "ns")["items"] == []


class BytesClient(FakeClient):
    """A FakeClient that hands out bodies undecoded, as the RESTClient does."""

    def __init__(self) -> None:
        super().__init__(FakeClock())
        self.raw_reads = 0

    def get_raw(self, resource: Resource, name: str, namespace: str | None = None) -> bytes:
        self.raw_reads += 1
        return orjson.dumps(self.get(resource, name, namespace))

    def list_raw(self, resource: Resource, namespace: str | None = None, *,
                 options: Any = None, **kwargs: Any) -> bytes:
        self.raw_reads += 1
        return orjson.dumps(self.list(resource, namespace, options=options, **kwargs))


def test_reads_decode_the_response_bytes_when_the_client_hands_them_out() -> None:
    fake = BytesClient()
    client = pyctrl.TypedClient(fake)
    created = client.create(widget(size=2))
    assert client.get(Widget, "w", "ns") == created
    assert client.list(Widget, "ns", label_selector="") == [created]
    assert fake.raw_reads == 2
    # Through a wrapper (the leader-fenced client is one), reads stay on the bytes path.
    assert pyctrl.TypedClient(ForwardingClient(fake)).get(Widget, "w", "ns") == created
    assert fake.raw_reads == 3


def test_apply_sends_only_the_fields_set_and_explicit_false_and_zero(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    partial = widget(paused=False, replicas=0)  # size=1 is its default: not sent
    client.apply(partial, "me", force=True)
    (action,) = [a for a in fake.actions if a.verb == "patch"]
    assert action.object == {"apiVersion": "test.pyctrl.io/v1", "kind": "Widget",
                             "metadata": {"name": "w", "namespace": "ns"},
                             "spec": {"paused": False, "replicas": 0}}
    assert action.options["patch_type"] == "apply" and action.options["field_manager"] == "me"


def test_patch_status_sends_only_what_changed_with_the_resource_version(
        fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    fake.create(WIDGETS, {"metadata": {"name": "w", "namespace": "ns"}})
    fake.patch(WIDGETS, "w", {"status": {"phase": "Up", "ready": 1,
                                         "newerField": "kept"}}, "ns",
               patch_type="merge", subresource="status")
    old = client.get(Widget, "w", "ns")
    new = api.replace(old, status=api.replace(old.status, ready=2, phase="", active=[]))
    fake.clear_actions()
    stored = client.patch_status(old, new)
    (action,) = fake.actions
    assert action.subresource == "status" and action.options["patch_type"] == "merge"
    # ready changed, phase went back to its default (removed), active stayed empty (unsent).
    assert action.object == {"status": {"phase": None, "ready": 2},
                             "metadata": {"resourceVersion": old.metadata.resource_version}}
    assert stored.status.ready == 2 and stored.status.phase == ""
    assert fake.get(WIDGETS, "w", "ns")["status"]["newerField"] == "kept"
    # Nothing changed (unset equals empty): no request, the old object back.
    fake.clear_actions()
    assert client.patch_status(stored, api.replace(stored, status=api.replace(
        stored.status, active=[]))) is stored
    assert fake.actions == []
    # A stale copy: the write is refused, never applied over the newer status.
    with pytest.raises(Conflict):
        client.patch_status(old, api.replace(old, status=api.replace(old.status, ready=5)))
    assert fake.get(WIDGETS, "w", "ns")["status"]["ready"] == 2


def test_the_equality_hook_decides_what_is_a_change(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    old = client.create(widget())
    new = api.replace(old, status=api.replace(old.status, observed_generation=1))
    fake.clear_actions()
    assert client.patch_status(old, new, equal=lambda field, a, b: field ==
                               "observedGeneration" or a == b) is old
    assert fake.actions == []
    client.patch_status(old, new)
    assert fake.actions[0].object["status"] == {"observedGeneration": 1}


def test_typed_set_controller_reference_returns_a_new_child(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    owner = client.create(widget("owner"))
    child = ConfigMap(metadata=api.ObjectMeta(name="c", namespace="ns"), data={"a": "b"})
    owned = pyctrl.set_controller_reference(owner, child)
    assert child.metadata.owner_references == []  # the input is never changed
    (ref,) = owned.metadata.owner_references
    assert (ref.api_version, ref.kind, ref.name, ref.uid, ref.controller,
            ref.block_owner_deletion) == ("test.pyctrl.io/v1", "Widget", "owner",
                                          owner.metadata.uid, True, True)
    assert pyctrl.set_controller_reference(owner, owned) == owned  # same owner: one ref
    assert pyctrl.is_controlled_by(owned, owner)
    stored = client.create(owned)
    assert stored.metadata.owner_references == owned.metadata.owner_references


def test_another_controller_s_child_is_refused_typed_and_raw(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    first, second = client.create(widget("first")), client.create(widget("second"))
    child = pyctrl.set_controller_reference(
        first, ConfigMap(metadata=api.ObjectMeta(name="c", namespace="ns")))
    with pytest.raises(AlreadyOwned, match="'c' is already controlled by Widget 'first'") as err:
        pyctrl.set_controller_reference(second, child)
    assert err.value.owner is not None and err.value.owner["uid"] == first.metadata.uid
    untyped = pyctrl.set_controller_reference(first, pyctrl.Unstructured.of(
        api.resource_for(ConfigMap))({"metadata": {"name": "c", "namespace": "ns"}}))
    with pytest.raises(pyctrl.AlreadyOwned):  # an Unstructured child, the same rule
        pyctrl.set_controller_reference(second, untyped)


def test_apply_never_takes_over_another_controller_s_child(fake: FakeClient) -> None:
    client = pyctrl.TypedClient(fake)
    first, second = client.create(widget("first")), client.create(widget("second"))

    def child(owner: Widget) -> ConfigMap:
        return pyctrl.set_controller_reference(
            owner, ConfigMap(metadata=api.ObjectMeta(name="c", namespace="ns")))

    client.apply(child(first), "first", force=True)
    with pytest.raises(AlreadyOwned, match="already controlled by Widget 'first'"):
        client.apply(child(second), "second", force=True)
    (ref,) = client.get(ConfigMap, "c", "ns").metadata.owner_references
    assert ref.uid == first.metadata.uid
    # The same owner applying again keeps its one reference.
    again = client.apply(api.replace(child(first), data={"k": "v"}), "first", force=True)
    assert again.metadata.owner_references == [ref] and again.data == {"k": "v"}
