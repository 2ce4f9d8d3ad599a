"""Indexer semantics: keys, CRUD, index maintenance, replace, add_indexers."""

from __future__ import annotations

import threading

import pytest

from pyctrl.cache.index import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    controller_uid_index_func,
    meta_namespace_index_func,
)
from pyctrl.cache.keys import (
    DeletedFinalStateUnknown,
    deletion_handling_meta_namespace_key,
    meta_namespace_key,
    split_meta_namespace_key,
)
from pyctrl.cache.store import Indexer
from tests.unit.cache.helpers import cm


def owned(name: str, owner_uid: str, ns: str = "default") -> dict[str, object]:
    return cm(name, ns=ns, metadata={"ownerReferences": [
        {"uid": "other", "controller": False}, {"uid": owner_uid, "controller": True}]})


def new_indexer() -> Indexer:
    return Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func,
                             CONTROLLER_UID_INDEX: controller_uid_index_func})


def test_keys_for_namespaced_and_cluster_scoped_objects() -> None:
    assert meta_namespace_key(cm("a", ns="ns1")) == "ns1/a"
    assert meta_namespace_key({"metadata": {"name": "node1"}}) == "node1"
    tomb = DeletedFinalStateUnknown("ns1/a", None)
    assert meta_namespace_key(tomb) == "ns1/a"
    assert deletion_handling_meta_namespace_key(tomb) == "ns1/a"
    assert split_meta_namespace_key("ns1/a") == ("ns1", "a")
    assert split_meta_namespace_key("node1") == ("", "node1")
    for bad in ("", "a/b/c", "ns/"):
        with pytest.raises(ValueError):
            split_meta_namespace_key(bad)


def test_add_get_update_delete_by_key_and_object() -> None:
    idx = new_indexer()
    a1 = cm("a", "1")
    idx.add(a1)
    assert idx.get_by_key("default/a") is a1  # stored as given, no copy
    assert idx.get(cm("a")) is a1
    a2 = cm("a", "2")
    idx.update(a2)
    assert idx.get_by_key("default/a") is a2
    assert idx.list_keys() == ["default/a"]
    idx.delete(DeletedFinalStateUnknown("default/a", None))
    assert idx.get_by_key("default/a") is None
    assert idx.list() == []
    idx.delete(cm("missing"))  # deleting an absent key is fine


def test_indexes_follow_updates_and_drop_empty_values() -> None:
    idx = new_indexer()
    idx.add(owned("j1", "cj-1"))
    idx.add(owned("j2", "cj-1"))
    idx.add(owned("j3", "cj-2", ns="other"))
    assert sorted(o["metadata"]["name"] for o in idx.by_index(CONTROLLER_UID_INDEX, "cj-1")) \
        == ["j1", "j2"]
    assert sorted(idx.index_keys(NAMESPACE_INDEX, "default")) == ["default/j1", "default/j2"]
    idx.update(owned("j2", "cj-2"))  # owner changes: re-filed
    assert idx.index_keys(CONTROLLER_UID_INDEX, "cj-1") == ["default/j1"]
    assert sorted(idx.index_keys(CONTROLLER_UID_INDEX, "cj-2")) == ["default/j2", "other/j3"]
    idx.delete(owned("j1", "cj-1"))
    assert "cj-1" not in idx.list_index_func_values(CONTROLLER_UID_INDEX)
    assert idx.by_index(CONTROLLER_UID_INDEX, "cj-1") == []
    assert sorted(idx.list_index_func_values(NAMESPACE_INDEX)) == ["default", "other"]


def test_replace_swaps_content_and_rebuilds_indexes() -> None:
    idx = new_indexer()
    idx.add(cm("old", ns="gone"))
    idx.replace([cm("a"), cm("b", ns="x")], "10")
    assert sorted(idx.list_keys()) == ["default/a", "x/b"]
    assert idx.by_index(NAMESPACE_INDEX, "gone") == []
    assert [o["metadata"]["name"] for o in idx.by_index(NAMESPACE_INDEX, "x")] == ["b"]


def test_add_indexers_indexes_existing_objects_and_rejects_duplicates() -> None:
    idx = Indexer()
    idx.add(owned("j1", "u1"))
    idx.add_indexers({CONTROLLER_UID_INDEX: controller_uid_index_func})
    assert idx.index_keys(CONTROLLER_UID_INDEX, "u1") == ["default/j1"]
    with pytest.raises(ValueError):
        idx.add_indexers({CONTROLLER_UID_INDEX: controller_uid_index_func})
    with pytest.raises(KeyError):
        idx.by_index("nope", "x")


def test_cluster_scoped_objects_are_not_namespace_indexed() -> None:
    idx = new_indexer()
    idx.add({"metadata": {"name": "n1"}})
    assert idx.list_index_func_values(NAMESPACE_INDEX) == []
    assert idx.get_by_key("n1") is not None


def test_concurrent_writers_keep_indexes_consistent() -> None:
    idx = new_indexer()

    def writer(prefix: str) -> None:
        for i in range(300):
            idx.add(cm(f"{prefix}{i}", ns=prefix))
            if i % 3 == 0:
                idx.delete(cm(f"{prefix}{i}", ns=prefix))

    threads = [threading.Thread(target=writer, args=(p,)) for p in ("a", "b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for ns in ("a", "b", "c"):
        assert len(idx.index_keys(NAMESPACE_INDEX, ns)) == 200
    assert len(idx) == 600
