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
  :class:`pyctrl.cache.SharedInformerFactory`; a typed owner's apiVersion and kind come from
  its class when unset).
* :func:`set_controller_reference` makes ``owner`` the controller of ``obj``: a reference to
  the same owner (same API group, kind and name) is replaced, otherwise one is appended. A
  typed ``obj`` (a :class:`pyctrl.api.Object`; typed objects are frozen and may be shared
  with a cache) gives a **new** object, returned; a raw dict is changed **in place** (pass
  a copy, never a cached object) and None is returned. The owner may be typed or raw either
  way. It raises :class:`pyctrl.errors.AlreadyOwned` (also importable from here) when
  another object already controls ``obj``, and ValueError when the owner can not own it (a
  namespaced owner of a cluster-scoped object, or one in another namespace: the garbage
  collector would delete the object).
* :func:`record_already_owned` records a refused ownership as a Warning Event, reason
  ``AlreadyOwned``, on the claimant the error names (the owner that asked; nothing when the
  error names none), with the error's message. Recording never raises (a recorder that
  fails is logged). The Controller calls it for an uncaught AlreadyOwned.
"""

from __future__ import annotations

from typing import Any, TypeVar, overload

import structlog

from pyctrl.api.typed import encode
from pyctrl.api.types import Object as Kind
from pyctrl.api.types import OwnerReference, replace
from pyctrl.errors import AlreadyOwned
from pyctrl.kube import meta
from pyctrl.kube.interface import Object
from pyctrl.kube.meta import AnyObject, controller_of
from pyctrl.record import EventRecorder

__all__ = [
    "AlreadyOwned",
    "controller_of",
    "is_controlled_by",
    "owner_reference",
    "record_already_owned",
    "set_controller_reference",
]

log = structlog.get_logger(__name__)


K = TypeVar("K", bound=Kind)


def is_controlled_by(obj: AnyObject, owner: AnyObject | str) -> bool:
    """True when ``owner`` (an object, or its uid) is ``obj``'s controller, by uid."""
    uid = owner if isinstance(owner, str) else meta.uid(owner)
    if not uid:
        return False
    ref = meta.controller_ref(obj)
    return ref is not None and ref.uid == uid


def owner_reference(owner: AnyObject, *, controller: bool = True,
                    block_owner_deletion: bool = True) -> dict[str, Any]:
    """An owner reference to ``owner`` (ValueError if it lacks apiVersion/kind/name/uid)."""
    ref: dict[str, Any] = {"apiVersion": meta.api_version(owner), "kind": meta.kind(owner),
                           "name": meta.name(owner), "uid": meta.uid(owner)}
    missing = [k for k, v in ref.items() if not v]
    if missing:
        raise ValueError(f"owner lacks {', '.join(missing)}: can not reference it")
    ref["controller"] = controller
    ref["blockOwnerDeletion"] = block_owner_deletion
    return ref


def _same_object(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (meta.api_group(a.get("apiVersion")) == meta.api_group(b.get("apiVersion"))
            and a.get("kind") == b.get("kind") and a.get("name") == b.get("name"))


@overload
def set_controller_reference(owner: AnyObject, obj: K, *,
                             block_owner_deletion: bool = True) -> K: ...


@overload
def set_controller_reference(owner: AnyObject, obj: Object, *,
                             block_owner_deletion: bool = True) -> None: ...


def set_controller_reference(owner: AnyObject, obj: Object | K, *,
                             block_owner_deletion: bool = True) -> K | None:
    """Make ``owner`` the controller of ``obj`` (see module docstring)."""
    ref = owner_reference(owner, block_owner_deletion=block_owner_deletion)
    owner_ns, obj_ns = meta.namespace(owner), meta.namespace(obj)
    if owner_ns:
        if not obj_ns:
            raise ValueError(f"namespaced owner {owner_ns}/{ref['name']} can not own a "
                             "cluster-scoped object")
        if obj_ns != owner_ns:
            raise ValueError(f"owner {owner_ns}/{ref['name']} is in another namespace than "
                             f"the object ({obj_ns})")
    if isinstance(obj, Kind):
        refs = [encode(r) for r in obj.metadata.owner_references]
        new = [OwnerReference(api_version=r["apiVersion"], kind=r["kind"], name=r["name"],
                              uid=r["uid"], controller=True,
                              block_owner_deletion=block_owner_deletion)
               if _same_object(r, ref) else old
               for r, old in zip(refs, obj.metadata.owner_references, strict=True)]
        _check_controller(meta.name(obj), obj_ns, refs, ref)
        if not any(_same_object(r, ref) for r in refs):
            new.append(OwnerReference(api_version=ref["apiVersion"], kind=ref["kind"],
                                      name=ref["name"], uid=ref["uid"], controller=True,
                                      block_owner_deletion=block_owner_deletion))
        return replace(obj, metadata=replace(obj.metadata, owner_references=new))
    md = obj.setdefault("metadata", {})
    current: list[dict[str, Any]] = list(md.get("ownerReferences") or [])
    _check_controller(meta.name(obj), obj_ns, current, ref)
    for i, existing in enumerate(current):
        if _same_object(existing, ref):
            current[i] = ref
            break
    else:
        current.append(ref)
    md["ownerReferences"] = current
    return None


def _check_controller(name: str, namespace: str, refs: list[dict[str, Any]],
                      ref: dict[str, Any]) -> None:
    current = controller_of({"metadata": {"ownerReferences": refs}})
    if current is not None and not _same_object(current, ref):
        raise AlreadyOwned(name, current, claimant=ref, namespace=namespace)


def record_already_owned(recorder: EventRecorder, err: AlreadyOwned) -> None:
    """A Warning Event ``AlreadyOwned`` on ``err``'s claimant (module docstring)."""
    claimant = err.claimant
    if claimant is None:
        return
    involved = {"apiVersion": claimant.get("apiVersion"), "kind": claimant.get("kind"),
                "metadata": {"name": claimant.get("name"), "namespace": err.namespace,
                             "uid": claimant.get("uid")}}
    try:
        recorder.event(involved, "Warning", "AlreadyOwned", str(err))
    except Exception as failed:  # an event is a report: it never fails the caller
        log.warning("could not record the AlreadyOwned event", error=repr(failed))
