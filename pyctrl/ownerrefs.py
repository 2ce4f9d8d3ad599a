"""Owner references: who controls an object, and making an owner its controller.

Contract (controller-runtime's ``controllerutil`` and apimachinery's ``metav1`` helpers):

* :func:`controller_of` returns the object's controller reference (the owner reference with
  ``controller: true``; an object has at most one), or None. It is
  :func:`pyctrl.kube.meta.controller_of`, the one walk over owner references (the cache's
  controller-UID index uses it too): a dict's reference is a dict, a typed object's typed.
* :func:`is_controlled_by` is True when that reference's ``uid`` is the owner's uid; the
  owner is given as an object or as its uid (never true for an empty uid). Objects and owners
  may be raw dicts or typed objects (read through :mod:`pyctrl.kube.meta`).
* :func:`owner_reference` builds a controller reference (a typed
  :class:`pyctrl.api.OwnerReference`) to ``owner``, any :class:`pyctrl.Object` or raw dict
  (which needs ``apiVersion``, ``kind``, ``metadata.name`` and ``metadata.uid``: objects read
  from the cache carry apiVersion/kind, see :class:`pyctrl.cache.SharedInformerFactory`; a
  typed owner's apiVersion and kind come from its class when unset).
* :func:`set_controller_reference` makes ``owner`` the controller of ``obj``, a
  :class:`pyctrl.Object` (a typed kind or an :class:`pyctrl.Unstructured`: frozen, maybe
  shared with a cache): a reference to the same owner (same API group, kind and name) is
  replaced, otherwise one is appended, in a **new** object, returned. It raises
  :class:`pyctrl.errors.AlreadyOwned` (also importable from here) when another object already
  controls ``obj``, and ValueError when the owner can not own it (a namespaced owner of a
  cluster-scoped object, or one in another namespace: the garbage collector would delete the
  object).
* :func:`record_already_owned` records a refused ownership as a Warning Event, reason
  ``AlreadyOwned``, on the claimant the error names (the owner that asked; nothing when the
  error names none), with the error's message. Recording never raises (a recorder that
  fails is logged). The Controller calls it for an uncaught AlreadyOwned.
"""

from __future__ import annotations

from typing import Any, TypeVar

import structlog

from pyctrl.api.types import Object, OwnerReference, replace
from pyctrl.api.unstructured import Unstructured
from pyctrl.errors import AlreadyOwned
from pyctrl.kube import meta
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


K = TypeVar("K", bound=Object | Unstructured)


def is_controlled_by(obj: AnyObject, owner: AnyObject | str) -> bool:
    """True when ``owner`` (an object, or its uid) is ``obj``'s controller, by uid."""
    uid = owner if isinstance(owner, str) else meta.uid(owner)
    if not uid:
        return False
    ref = meta.controller_ref(obj)
    return ref is not None and ref.uid == uid


def owner_reference(owner: AnyObject, *, controller: bool = True,
                    block_owner_deletion: bool = True) -> OwnerReference:
    """An owner reference to ``owner`` (ValueError if it lacks apiVersion/kind/name/uid)."""
    fields = {"apiVersion": meta.api_version(owner), "kind": meta.kind(owner),
              "name": meta.name(owner), "uid": meta.uid(owner)}
    missing = [k for k, v in fields.items() if not v]
    if missing:
        raise ValueError(f"owner lacks {', '.join(missing)}: can not reference it")
    return OwnerReference(api_version=fields["apiVersion"], kind=fields["kind"],
                          name=fields["name"], uid=fields["uid"], controller=controller,
                          block_owner_deletion=block_owner_deletion)


def _same_object(a: meta.OwnerReferenceLike, b: meta.OwnerReferenceLike) -> bool:
    return (meta.api_group(a.api_version) == meta.api_group(b.api_version)
            and a.kind == b.kind and a.name == b.name)


def _as_dict(ref: meta.OwnerReferenceLike) -> dict[str, Any]:
    return {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name,
            "uid": ref.uid, "controller": ref.controller}


def set_controller_reference(owner: AnyObject, obj: K, *,
                             block_owner_deletion: bool = True) -> K:
    """``obj`` with ``owner`` as its controller (see module docstring)."""
    ref = owner_reference(owner, block_owner_deletion=block_owner_deletion)
    owner_ns, obj_ns = meta.namespace(owner), meta.namespace(obj)
    if owner_ns:
        if not obj_ns:
            raise ValueError(f"namespaced owner {owner_ns}/{ref.name} can not own a "
                             "cluster-scoped object")
        if obj_ns != owner_ns:
            raise ValueError(f"owner {owner_ns}/{ref.name} is in another namespace than "
                             f"the object ({obj_ns})")
    current = controller_of(obj)
    if current is not None and not _same_object(current, ref):
        raise AlreadyOwned(meta.name(obj), _as_dict(current), claimant=_as_dict(ref),
                           namespace=obj_ns)
    refs = list(obj.metadata.owner_references)
    same = [i for i, r in enumerate(refs) if _same_object(r, ref)]
    if same:
        refs[same[0]] = ref
    else:
        refs.append(ref)
    return replace(obj, metadata=replace(obj.metadata, owner_references=refs))


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
