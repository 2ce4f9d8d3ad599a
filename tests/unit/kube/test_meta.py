"""pyctrl.kube.meta: the one walk over ownerReferences, metadata read from raw dicts and typed
objects alike, and their users (keys, indexes, handlers, predicates, ownerrefs)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from pyctrl import Request, api, ownerrefs
from pyctrl.cache import controller_uid_index_func, meta_namespace_index_func, meta_namespace_key
from pyctrl.handlers import (
    enqueue_object,
    enqueue_owner,
    generation_changed,
    is_status_only,
    label_selector_predicate,
    resource_version_changed,
)
from pyctrl.kube import meta
from pyctrl.kube.meta import controller_of

OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1",
         "controller": True}
OTHER = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u2"}


def _with(refs: Any) -> dict[str, Any]:
    return {"metadata": {"name": "x", "ownerReferences": refs}}


def test_returns_the_controller_reference_itself() -> None:
    obj = _with([OTHER, OWNER])
    assert controller_of(obj) is obj["metadata"]["ownerReferences"][1]


def test_first_controller_wins() -> None:
    second = {**OWNER, "uid": "u3"}
    assert controller_of(_with([OWNER, second])) is OWNER


@pytest.mark.parametrize("obj", [
    {},
    {"metadata": None},
    {"metadata": "nonsense"},
    _with(None),
    _with("nonsense"),
    _with([OTHER]),
    _with([{**OWNER, "controller": False}]),
    _with([{**OWNER, "controller": "true"}]),  # only the JSON boolean counts
    _with(["nonsense", 3, None]),
])
def test_no_controller(obj: dict[str, Any]) -> None:
    assert controller_of(obj) is None


def test_every_user_walks_the_same_way() -> None:
    """The public helper, the cache's controller-UID index, enqueue_owner and the CronJob
    controller agree."""
    assert ownerrefs.controller_of is controller_of
    for obj, uid in [(_with([OTHER, OWNER]), "u1"), (_with([OTHER]), None),
                     (_with(["bad", {**OWNER, "uid": None}]), None)]:
        assert controller_uid_index_func(obj) == ([uid] if uid else [])
        ref = meta.controller_ref(obj)  # what the CronJob controller reads
        assert ((ref.uid or None) if ref is not None else None) == uid


class _Keys:
    def __init__(self) -> None:
        self.keys: list[str] = []

    def add(self, item: Request) -> None:
        self.keys.append(str(item))


def test_enqueue_owner_follows_the_controller_reference() -> None:
    queue = _Keys()
    handler = enqueue_owner(queue, "apps", "ReplicaSet")
    for refs in ([OTHER, OWNER], ["bad"], [{**OWNER, "controller": "yes"}], [OTHER]):
        obj = _with(refs)
        obj["metadata"]["namespace"] = "ns"
        handler.on_add(obj, False)
    assert queue.keys == ["ns/rs"]


# -- raw dicts and typed objects read alike --------------------------------------------------

@api.kind("meta.test.pyctrl.io/v1", "Gadget")
class Gadget(api.Object):
    spec: dict[str, str] = api.field(default_factory=dict)


RAW: dict[str, Any] = {
    "apiVersion": "meta.test.pyctrl.io/v1", "kind": "Gadget",
    "metadata": {"name": "g", "generateName": "g-", "namespace": "ns", "uid": "u9",
                 "resourceVersion": "7",
                 "generation": 3, "labels": {"app": "web"}, "annotations": {"a": "b"},
                 "finalizers": ["f"], "deletionTimestamp": "2026-01-02T03:04:05Z",
                 "ownerReferences": [OTHER, OWNER]},
    "spec": {"x": "y"},
}


def _typed(raw: dict[str, Any] = RAW) -> Gadget:
    return api.decode(Gadget, raw)


@pytest.mark.parametrize("read, want", [
    (meta.name, "g"), (meta.generate_name, "g-"), (meta.namespace, "ns"), (meta.uid, "u9"),
    (meta.resource_version, "7"),
    (meta.generation, 3), (meta.labels, {"app": "web"}), (meta.annotations, {"a": "b"}),
    (meta.finalizers, ["f"]), (meta.api_version, "meta.test.pyctrl.io/v1"),
    (meta.kind, "Gadget"),
])
def test_accessors_read_dicts_and_typed_objects_alike(read: Any, want: object) -> None:
    assert read(RAW) == want
    assert read(_typed()) == want


def test_missing_metadata_reads_empty_in_both_forms() -> None:
    bare: dict[str, Any] = {"metadata": {"name": "g"}}
    for obj in (bare, _typed(bare)):
        assert (meta.namespace(obj), meta.uid(obj), meta.resource_version(obj),
                meta.generate_name(obj)) == ("", "", "", "")
        assert meta.generation(obj) is None
        assert not meta.labels(obj) and not meta.annotations(obj)
        assert not meta.finalizers(obj) and not meta.owner_references(obj)
        assert meta.deletion_timestamp(obj) is None and meta.controller_ref(obj) is None
    assert meta.deletion_timestamp(RAW) == "2026-01-02T03:04:05Z"
    assert meta.deletion_timestamp(_typed()) == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_type_of_an_unset_typed_object_comes_from_its_class() -> None:
    built = Gadget(metadata=api.ObjectMeta(name="o", uid="u5"))  # apiVersion/kind unset
    assert (built.api_version, built.kind) == ("", "")
    assert (meta.api_version(built), meta.kind(built)) == ("meta.test.pyctrl.io/v1", "Gadget")
    assert (meta.api_version({}), meta.kind({})) == ("", "")
    ref = ownerrefs.owner_reference(built)
    assert (ref.api_version, ref.kind) == ("meta.test.pyctrl.io/v1", "Gadget")


def test_controller_of_a_typed_object_is_its_typed_reference() -> None:
    typed = _typed()
    ref = controller_of(typed)
    assert isinstance(ref, api.OwnerReference) and ref is typed.metadata.owner_references[1]
    want = meta.OwnerRef("apps/v1", "ReplicaSet", "rs", "u1")
    assert meta.controller_ref(typed) == meta.controller_ref(RAW) == want


def test_keys_indexes_handlers_and_ownerrefs_take_typed_objects() -> None:
    typed = _typed()
    assert meta_namespace_key(typed) == meta_namespace_key(RAW) == "ns/g"
    assert meta_namespace_index_func(typed) == ["ns"]
    assert controller_uid_index_func(typed) == ["u1"]
    assert Request.from_object(typed) == Request("ns", "g")
    assert ownerrefs.is_controlled_by(typed, "u1") and not ownerrefs.is_controlled_by(typed, "u2")
    owner = api.decode(Gadget, {**RAW, "metadata": {"name": "o", "uid": "u5"}})
    assert ownerrefs.owner_reference(owner).uid == "u5"
    assert ownerrefs.owner_reference(owner).kind == "Gadget"
    queue = _Keys()
    enqueue_owner(queue, "apps", "ReplicaSet").on_add(typed, False)
    enqueue_object(queue).on_add(typed, False)
    assert queue.keys == ["ns/rs", "ns/g"]
    with pytest.raises(KeyError):
        meta_namespace_key(_typed({"metadata": {"namespace": "ns"}}))


def test_predicates_compare_typed_objects() -> None:
    old = _typed()
    bumped = api.replace(old, metadata=api.replace(old.metadata, generation=4,
                                                   resource_version="8"))
    relabelled = api.replace(old, metadata=api.replace(old.metadata, labels={"app": "db"}))
    assert generation_changed.update is not None and resource_version_changed.update is not None
    assert generation_changed.update(old, bumped) and not generation_changed.update(old, old)
    assert resource_version_changed.update(old, bumped)
    assert not resource_version_changed.update(old, old)
    assert is_status_only(old, api.replace(old, spec={"x": "z"}))
    assert not is_status_only(old, relabelled) and not is_status_only(old, bumped)
    matches = label_selector_predicate("app=web").add
    assert matches is not None and matches(old) and not matches(relabelled)
