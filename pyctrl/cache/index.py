"""Index functions for the :class:`pyctrl.cache.store.Indexer`.

Contract: an index function maps an object to the list of index values it files under
(zero, one or many). It must be pure and cheap: it runs on every add/update/delete under the
indexer's lock. Two standard indexes ship here, mirroring client-go:

* ``NAMESPACE_INDEX`` / :func:`meta_namespace_index_func`: the object's namespace ("" objects,
  i.e. cluster-scoped ones, are not indexed).
* ``CONTROLLER_UID_INDEX`` / :func:`controller_uid_index_func`: the uid of the owner reference
  marked ``controller: true`` (how a CronJob controller finds its Jobs without a LIST).

Both read through :mod:`pyctrl.kube.meta`, so they index raw dicts and typed objects alike;
an index function of a typed informer receives the typed (frozen) objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyctrl.kube import meta

__all__ = [
    "CONTROLLER_UID_INDEX",
    "NAMESPACE_INDEX",
    "IndexFunc",
    "Indexers",
    "controller_uid_index_func",
    "meta_namespace_index_func",
]

# Any: a raw-dict informer passes dicts, a typed one its kind's objects.
IndexFunc = Callable[[Any], list[str]]
Indexers = dict[str, IndexFunc]

NAMESPACE_INDEX = "namespace"
CONTROLLER_UID_INDEX = "controller-uid"


def meta_namespace_index_func(obj: meta.AnyObject) -> list[str]:
    """Index by ``metadata.namespace``; cluster-scoped objects get no entry."""
    ns = meta.namespace(obj)
    return [ns] if ns else []


def controller_uid_index_func(obj: meta.AnyObject) -> list[str]:
    """Index by the uid of the controlling owner reference, if there is one."""
    ref = meta.controller_ref(obj)
    return [ref.uid] if ref is not None and ref.uid else []
