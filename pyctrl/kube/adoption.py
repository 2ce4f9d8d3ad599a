"""Server-side apply of an owned object that never adopts an object its owner did not create.

Contract (:func:`apply_owned`, on the transport's raw bodies; :meth:`pyctrl.TypedClient.apply`
is built on it, and :func:`pyctrl.create_or_update` keeps the same rule):

* A body whose ``metadata.ownerReferences`` names a controller (``controller: true``) is
  applied only onto an object that does not exist yet or that this controller controls
  already (its controller reference has the same uid). An existing object without a
  controller (a user's own) raises :class:`~pyctrl.errors.AdoptionRefused`, one with another
  controller :class:`~pyctrl.errors.AlreadyOwned`, both before anything is written, naming
  the object, its namespace and the refused claimant. ``adopt=True`` applies anyway (taking
  over an object nobody controls; the server still refuses a second controller, 422, which
  is raised as AlreadyOwned). Both errors are terminal (:class:`~pyctrl.errors.TerminalError`).
* Cost: the first apply of an object through one :class:`Claims` reads it (one GET). The uid
  of an object found ours, or created by the apply, is remembered, and later applies send it
  as ``metadata.uid``: a precondition the server checks (the object was deleted: 409; it was
  replaced by another of the same name: 422, the uid is immutable). On either answer the
  memory is dropped and the object read again, once. So in the steady state an apply is one
  PATCH, as before. A uid the caller set in the body is the caller's precondition and is
  sent as is. Memory: at most ``size`` objects per Claims (least recently used dropped).
* Without a controller reference in the body, with ``subresource`` (status), or with
  ``adopt=True``: one plain apply; nothing remembered.
* Left open: an object someone else creates between the GET that found nothing and the apply
  (one round trip) is adopted.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from pyctrl.errors import AdoptionRefused, AlreadyOwned, ApiError, Conflict, Invalid, NotFound
from pyctrl.kube import meta
from pyctrl.kube.interface import Client, RawObject
from pyctrl.kube.resource import Resource

__all__ = ["Claims", "apply_owned"]

_Key = tuple[str, str, str, str, str]  # group, plural, namespace, name, owner uid


class Claims:
    """The uids of objects found controlled by the owner that applies them, per object and
    owner (bounded LRU)."""

    def __init__(self, size: int = 10_000) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self._size = size
        self._uids: OrderedDict[_Key, str] = OrderedDict()
        self._mu = threading.Lock()

    def get(self, key: _Key) -> str | None:
        with self._mu:
            uid = self._uids.get(key)
            if uid is not None:
                self._uids.move_to_end(key)
            return uid

    def remember(self, key: _Key, uid: str) -> None:
        with self._mu:
            self._uids[key] = uid
            self._uids.move_to_end(key)
            while len(self._uids) > self._size:
                self._uids.popitem(last=False)

    def forget(self, key: _Key) -> None:
        with self._mu:
            self._uids.pop(key, None)

    def __len__(self) -> int:
        return len(self._uids)


def apply_owned(client: Client, resource: Resource, name: str, namespace: str | None,
                body: RawObject, *, field_manager: str, force: bool, claims: Claims,
                adopt: bool = False, subresource: str | None = None) -> RawObject:
    """Server-side apply ``body`` (module docstring); the object as stored."""
    ours = None if adopt or subresource is not None else meta.controller_of(body)

    def send(payload: RawObject) -> RawObject:
        try:
            return client.patch(resource, name, payload, namespace, patch_type="apply",
                                field_manager=field_manager, force=force,
                                subresource=subresource)
        except Invalid as err:
            if subresource is None:
                _refuse_second_controller(client, resource, name, namespace, body, err)
            raise

    if ours is None:
        return send(body)
    key = (resource.group, resource.plural, namespace or "", name, str(ours.get("uid")))
    sent_uid = (body.get("metadata") or {}).get("uid") or None
    known = claims.get(key)
    if known is not None and sent_uid in (None, known):
        try:
            return _remembered(claims, key, send(_with_uid(body, known)))
        except (Conflict, Invalid) as err:
            claims.forget(key)
            if sent_uid is not None or not _uid_refused(err):
                raise
    uid = _stored_uid(client, resource, name, namespace, ours)
    if sent_uid is not None or uid is None:
        return _remembered(claims, key, send(body))
    return _remembered(claims, key, send(_with_uid(body, uid)))


def _remembered(claims: Claims, key: _Key, answer: RawObject) -> RawObject:
    uid = meta.uid(answer)
    if uid:
        claims.remember(key, uid)
    return answer


def _with_uid(body: RawObject, uid: str) -> RawObject:
    return {**body, "metadata": {**(body.get("metadata") or {}), "uid": uid}}


def _uid_refused(err: Conflict | Invalid) -> bool:
    """The answer to a stale ``metadata.uid`` precondition (module docstring)."""
    if isinstance(err, Invalid):
        return any(c.field == "metadata.uid" for c in err.causes)
    return "uid mismatch" in err.message


def _stored_uid(client: Client, resource: Resource, name: str, namespace: str | None,
                ours: dict[str, Any]) -> str | None:
    """The uid of the stored object when ``ours`` controls it, None when there is none;
    raise when it exists without that controller (module docstring)."""
    try:
        stored = client.get(resource, name, namespace)
    except NotFound:
        return None
    theirs = meta.controller_of(stored)
    if theirs is not None and theirs.get("uid") == ours.get("uid"):
        return meta.uid(stored)
    args: dict[str, Any] = {"claimant": ours, "namespace": namespace or "",
                            "kind": resource.kind}
    if theirs is None:
        raise AdoptionRefused(name, None, **args)
    raise AlreadyOwned(name, theirs, **args)


def _refuse_second_controller(client: Client, resource: Resource, name: str,
                              namespace: str | None, body: RawObject, err: Invalid) -> None:
    """Raise AlreadyOwned when the server refused ``body`` because the stored object has
    another controller (its 422 names ``metadata.ownerReferences``)."""
    ours = meta.controller_of(body)
    if ours is None or not any(c.field == "metadata.ownerReferences" for c in err.causes):
        return
    try:
        stored = client.get(resource, name, namespace)
    except ApiError:
        return  # the Invalid answer stands
    theirs = meta.controller_of(stored)
    if theirs is not None and theirs.get("uid") != ours.get("uid"):
        raise AlreadyOwned(name, theirs, claimant=ours, namespace=namespace or "",
                           kind=resource.kind) from err
