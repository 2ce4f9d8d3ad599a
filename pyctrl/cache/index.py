"""Index functions for the :class:`pyctrl.cache.store.Indexer`.

Contract: an index function maps an object to the list of index values it files under
(zero, one or many). It must be pure and cheap: it runs on every add/update/delete under the
indexer's lock. Two standard indexes ship here, mirroring client-go:

* ``NAMESPACE_INDEX`` / :func:`meta_namespace_index_func`: the object's namespace ("" objects,
  i.e. cluster-scoped ones, are not indexed).
* ``CONTROLLER_UID_INDEX`` / :func:`controller_uid_index_func`: the uid of the owner reference
  marked ``controller: true`` (how a CronJob controller finds its Jobs without a LIST).
"""

from __future__ import annotations

from collections.abc import Callable

from pyctrl.kube.interface import Object
from pyctrl.kube.meta import controller_of

__all__ = [
    "CONTROLLER_UID_INDEX",
    "NAMESPACE_INDEX",
    "IndexFunc",
    "Indexers",
    "controller_uid_index_func",
    "meta_namespace_index_func",
]

IndexFunc = Callable[[Object], list[str]]
Indexers = dict[str, IndexFunc]

NAMESPACE_INDEX = "namespace"
CONTROLLER_UID_INDEX = "controller-uid"


def meta_namespace_index_func(obj: Object) -> list[str]:
    """Index by ``metadata.namespace``; cluster-scoped objects get no entry."""
    ns = obj.get("metadata", {}).get("namespace")
    return [ns] if ns else []


def controller_uid_index_func(obj: Object) -> list[str]:
    """Index by the uid of the controlling owner reference, if there is one."""
    ref = controller_of(obj)
    uid = ref.get("uid") if ref is not None else None
    return [uid] if isinstance(uid, str) and uid else []
