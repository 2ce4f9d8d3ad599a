"""Writing desired state: ``create_or_update`` and server-side ``apply``.

The contracts are in the two functions' docstrings, so ``help(pyctrl.apply)`` shows them:
the facade binds ``pyctrl.apply`` to the function, which hides this module's docstring.
"""

from __future__ import annotations

import copy
import threading
import weakref
from collections.abc import Callable
from typing import Literal

from pyctrl.errors import NotFound
from pyctrl.kube import meta
from pyctrl.kube.adoption import Claims, apply_owned
from pyctrl.kube.interface import Client, Object
from pyctrl.kube.resource import Resource

__all__ = ["OperationResult", "apply", "create_or_update"]

OperationResult = Literal["created", "updated", "unchanged"]


def _name_ns(obj: Object) -> tuple[str, str | None]:
    name = meta.name(obj)
    if not name:
        raise ValueError("the object needs metadata.name")
    return name, meta.namespace(obj) or None


def _replace(obj: Object, content: Object) -> None:
    obj.clear()
    obj.update(content)


def create_or_update(client: Client, resource: Resource, obj: Object,
                     mutate: Callable[[Object], None]) -> OperationResult:
    """Create ``obj`` or update it if ``mutate`` changed it (controllerutil.CreateOrUpdate).

    ``obj`` names the object (``metadata.name``, ``metadata.namespace``). It GETs the object;
    if it exists, ``obj``'s content is replaced by the server's copy. Then ``mutate(obj)`` sets
    the desired state in place (it must not change the name or namespace: ValueError). A
    missing object is created; an existing one is updated only if ``mutate`` changed it (with
    its resourceVersion, so a concurrent write raises :class:`pyctrl.errors.Conflict`).
    Returns ``"created"``, ``"updated"`` or ``"unchanged"``; afterwards ``obj`` holds what the
    server stored. Reads go to the server, not the cache (as controller-runtime's do through
    its client); use it for objects you write rarely, or prefer :func:`apply`.
    """
    name, namespace = _name_ns(obj)
    try:
        existing = client.get(resource, name, namespace)
    except NotFound:
        mutate(obj)
        if _name_ns(obj) != (name, namespace):
            raise ValueError("mutate must not change the object's name or namespace") from None
        _replace(obj, client.create(resource, obj, namespace))
        return "created"
    _replace(obj, copy.deepcopy(existing))
    mutate(obj)
    if _name_ns(obj) != (name, namespace):
        raise ValueError("mutate must not change the object's name or namespace")
    if obj == existing:
        return "unchanged"
    _replace(obj, client.update(resource, obj, namespace))
    return "updated"


_claims: weakref.WeakKeyDictionary[Client, Claims] = weakref.WeakKeyDictionary()
_claims_mu = threading.Lock()


def _claims_of(client: Client) -> Claims:
    """The owned objects ``apply`` found ours through ``client`` (a fresh memory for a
    client that can not be weakly referenced)."""
    with _claims_mu:
        try:
            found = _claims.get(client)
            if found is None:
                found = _claims[client] = Claims()
        except TypeError:
            return Claims()
        return found


def apply(client: Client, resource: Resource, obj: Object, field_manager: str, *,
          force: bool = False, subresource: str | None = None, adopt: bool = False) -> Object:
    """Server-side apply ``obj`` as ``field_manager``; returns the stored object.

    ``obj`` is sent as an ``application/apply-patch+yaml`` patch owned by ``field_manager``:
    the server creates the object or merges the fields this manager sets and drops those it
    no longer sets. ``force=True`` takes over fields other managers own (controllers usually
    want this), otherwise conflicts raise :class:`pyctrl.errors.Conflict`. ``apiVersion`` and
    ``kind`` are filled from ``resource`` when missing; ``managedFields`` and
    ``resourceVersion`` are not sent (an apply is not a read-modify-write). ``subresource``
    (e.g. ``"status"``) applies to that subresource. ``obj`` is not modified.

    An ``obj`` with a controller reference (:func:`pyctrl.set_controller_reference`) never
    adopts an existing object its owner did not create: one with no controller raises
    :class:`pyctrl.errors.AdoptionRefused`, one with another :class:`pyctrl.errors.AlreadyOwned`
    (both terminal, nothing written) unless ``adopt=True``. The first apply of an object
    through ``client`` reads it once; later ones send its uid as a precondition instead (the
    contract is :mod:`pyctrl.kube.adoption`'s).
    """
    if not field_manager:
        raise ValueError("server-side apply needs a field_manager")
    name, namespace = _name_ns(obj)
    body: Object = {"apiVersion": resource.api_version, "kind": resource.kind,
                    **copy.deepcopy(obj)}
    md = body["metadata"]
    md.pop("managedFields", None)
    md.pop("resourceVersion", None)
    return apply_owned(client, resource, name, namespace, body, field_manager=field_manager,
                       force=force, subresource=subresource, adopt=adopt,
                       claims=_claims_of(client))
