"""Writing desired state by read-modify-write: ``create_or_update``.

The contract is in the function's docstring, so ``help(pyctrl.create_or_update)`` shows it.
Server-side apply is :meth:`pyctrl.TypedClient.apply` (the same adoption rules).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeVar

from pyctrl.api.client import TypedClient
from pyctrl.api.types import Object
from pyctrl.api.unstructured import Unstructured
from pyctrl.errors import AdoptionRefused, AlreadyOwned, NotFound
from pyctrl.kube import meta

__all__ = ["OperationResult", "create_or_update"]

OperationResult = Literal["created", "updated", "unchanged"]
T = TypeVar("T", bound=Object | Unstructured)


def _name_ns(obj: Object | Unstructured) -> tuple[str, str | None]:
    name = obj.metadata.name
    if not name:
        raise ValueError("the object needs metadata.name")
    return name, obj.metadata.namespace or None


def create_or_update(client: TypedClient, obj: T, mutate: Callable[[T], T], *,
                     adopt: bool = False) -> tuple[T, OperationResult]:
    """Create ``obj`` or update it if ``mutate`` changed it (controllerutil.CreateOrUpdate).

    ``obj`` (a typed object or an :class:`pyctrl.Unstructured` of a bound class) names the
    object (``metadata.name``, ``metadata.namespace``). It GETs the object; ``mutate`` is
    given the server's copy, or ``obj`` when there is none, and returns the desired object
    (objects are frozen: build it with ``pyctrl.api.replace``); it must not change the name
    or namespace (ValueError). A missing object is created; an existing one is updated only
    if ``mutate`` changed it (with its resourceVersion, so a concurrent write raises
    :class:`pyctrl.errors.Conflict`). Returns the object as the server stored it (the read
    one when ``"unchanged"``) and ``"created"``, ``"updated"`` or ``"unchanged"``.

    It never adopts silently: when ``mutate`` gives an existing object a controller reference
    (:func:`pyctrl.set_controller_reference`) and the stored object has no controller (a
    user's own), :class:`pyctrl.errors.AdoptionRefused` is raised and nothing is written,
    unless ``adopt=True``; when the stored object has another controller,
    :class:`pyctrl.errors.AlreadyOwned`. Reads go to the server, not the cache (as
    controller-runtime's do through its client); an update sends the whole object, so a
    typed object loses the fields its class does not declare: prefer
    :meth:`pyctrl.TypedClient.apply` for objects others write too.
    """
    name, namespace = _name_ns(obj)
    cls = type(obj)
    try:
        existing = client.get(cls, name, namespace)
    except NotFound:
        desired = mutate(obj)
        if _name_ns(desired) != (name, namespace):
            raise ValueError("mutate must not change the object's name or namespace") from None
        return client.create(desired), "created"
    desired = mutate(existing)
    if _name_ns(desired) != (name, namespace):
        raise ValueError("mutate must not change the object's name or namespace")
    if desired == existing:
        return existing, "unchanged"
    _refuse_adoption(existing, desired, adopt)
    return client.update(desired), "updated"


def _refuse_adoption(existing: Object | Unstructured, desired: Object | Unstructured,
                     adopt: bool) -> None:
    ours = meta.controller_of(desired)
    theirs = meta.controller_of(existing)
    if ours is None or adopt or (theirs is not None and theirs.uid == ours.uid):
        return
    name, namespace, kind = existing.metadata.name, existing.metadata.namespace, meta.kind(existing)
    if theirs is None:
        raise AdoptionRefused(name, None, claimant=_ref(ours), namespace=namespace, kind=kind)
    raise AlreadyOwned(name, _ref(theirs), claimant=_ref(ours), namespace=namespace, kind=kind)


def _ref(ref: meta.OwnerReferenceLike) -> dict[str, str]:
    return {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name, "uid": ref.uid}
