"""Owner references: who controls an object, and making an owner its controller.

Contract (controller-runtime's ``controllerutil`` and apimachinery's ``metav1`` helpers):

* :func:`controller_of` returns the object's controller reference (the owner reference with
  ``controller: true``; an object has at most one), or None. It is
  :func:`pyctrl.kube.meta.controller_of`, the one walk over owner references (the cache's
  controller-UID index uses it too): a dict's reference is a dict, a typed object's typed.
* :func:`is_controlled_by` is True when that reference's ``uid`` is the owner's uid; the
  owner is given as an object or as its uid (never true for an empty uid). Objects and owners
  may be raw dicts or typed objects (read through :mod:`pyctrl.kube.meta`).
* :func:`owner_reference` builds a controller reference (a dict) to ``owner``, a raw dict or
  a typed object (which needs ``apiVersion``, ``kind``, ``metadata.name`` and
  ``metadata.uid``: objects read from the cache carry apiVersion/kind, see
  :class:`pyctrl.cache.SharedInformerFactory`).
* :func:`set_controller_reference` makes ``owner`` the controller of ``obj`` **in place**
  (pass a copy, never a cached object): a reference to the same owner (same API group, kind
  and name) is replaced, otherwise one is appended. It raises :class:`AlreadyOwnedError` when
  another object already controls ``obj``, and ValueError when the owner can not own it (a
  namespaced owner of a cluster-scoped object, or one in another namespace: the garbage
  collector would delete the object).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyctrl.kube import meta
from pyctrl.kube.interface import Object
from pyctrl.kube.meta import AnyObject, controller_of

__all__ = [
    "AlreadyOwnedError",
    "controller_of",
    "is_controlled_by",
    "owner_reference",
    "set_controller_reference",
]


class AlreadyOwnedError(ValueError):
    """The object already has a different controller (owner reference with controller=true)."""


def _group(api_version: object) -> str:
    text = str(api_version or "")
    return text.rpartition("/")[0] if "/" in text else ""


def is_controlled_by(obj: AnyObject, owner: AnyObject | str) -> bool:
    """True when ``owner`` (an object, or its uid) is ``obj``'s controller, by uid."""
    uid = owner if isinstance(owner, str) else meta.uid(owner)
    if not uid:
        return False
    ref = meta.controller_ref(obj)
    return ref is not None and ref.uid == uid


def _type_of(obj: AnyObject) -> tuple[object, object]:
    if isinstance(obj, Mapping):
        return obj.get("apiVersion"), obj.get("kind")
    return getattr(obj, "api_version", ""), getattr(obj, "kind", "")


def owner_reference(owner: AnyObject, *, controller: bool = True,
                    block_owner_deletion: bool = True) -> dict[str, Any]:
    """An owner reference to ``owner`` (ValueError if it lacks apiVersion/kind/name/uid)."""
    api_version, kind = _type_of(owner)
    ref: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": meta.name(owner),
                           "uid": meta.uid(owner)}
    missing = [k for k, v in ref.items() if not v]
    if missing:
        raise ValueError(f"owner lacks {', '.join(missing)}: can not reference it")
    ref["controller"] = controller
    ref["blockOwnerDeletion"] = block_owner_deletion
    return ref


def _same_object(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (_group(a.get("apiVersion")) == _group(b.get("apiVersion"))
            and a.get("kind") == b.get("kind") and a.get("name") == b.get("name"))


def set_controller_reference(owner: AnyObject, obj: Object, *,
                             block_owner_deletion: bool = True) -> None:
    """Make ``owner`` the controller of ``obj`` in place (see module docstring)."""
    ref = owner_reference(owner, block_owner_deletion=block_owner_deletion)
    owner_ns = meta.namespace(owner)
    md = obj.setdefault("metadata", {})
    obj_ns = meta.namespace(obj)
    if owner_ns:
        if not obj_ns:
            raise ValueError(f"namespaced owner {owner_ns}/{ref['name']} can not own a "
                             "cluster-scoped object")
        if obj_ns != owner_ns:
            raise ValueError(f"owner {owner_ns}/{ref['name']} is in another namespace than "
                             f"the object ({obj_ns})")
    current = controller_of(obj)
    if current is not None and not _same_object(current, ref):
        raise AlreadyOwnedError(
            f"{md.get('name')!r} is already controlled by {current.get('kind')} "
            f"{current.get('name')!r}")
    refs: list[dict[str, Any]] = list(md.get("ownerReferences") or [])
    for i, existing in enumerate(refs):
        if _same_object(existing, ref):
            refs[i] = ref
            break
    else:
        refs.append(ref)
    md["ownerReferences"] = refs
