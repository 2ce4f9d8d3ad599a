"""TypedClient: the :class:`pyctrl.kube.Client` verbs on kind classes and typed objects.

Contract (controller-runtime's client, on :class:`pyctrl.api.Object` subclasses and, for a
kind with no class, :class:`pyctrl.api.Unstructured` bound to its Resource, e.g.
``client.get(Unstructured.of(CONFIGMAPS), "app", "web")``):

* ``TypedClient(client)`` wraps any raw-dict :class:`~pyctrl.kube.Client` (the RESTClient,
  the leader-fenced client a Manager hands out, a FakeClient); :attr:`raw` is that client, for
  unstructured calls. The Resource of every call is :func:`pyctrl.api.resource_for` of the
  kind class given (``get``/``list``/``patch``/``delete`` by class) or of the object's class
  (``create``/``update``/``apply``/``delete``/status writes by instance); name and namespace
  come from the object's metadata. Arguments keep the raw client's order (``name`` then
  ``namespace``), so ``client.get(Website, "blog", "web")`` names what
  ``client.raw.get(WEBSITES, "blog", "web")`` does.
* Every answer is decoded into the class given (or the object's class), fresh, never shared
  with a cache: from the response bytes straight into the class when the client can hand out
  undecoded bodies (the RESTClient's GET and LIST, :class:`~pyctrl.kube.RawGetter` and
  :class:`~pyctrl.kube.RawLister`), from the decoded dict otherwise. Unknown fields are not
  kept by a typed object: writes that send a whole object (``create``, ``update``,
  ``update_status``) send only the declared fields, so use them on objects this program
  declares in full; for objects others write too, prefer ``apply`` or the status diff.
* :meth:`apply` is server-side apply of a typed, usually partial, object: the fields sent are
  those whose value differs from the field's default (``omit_defaults``). A kind meant for
  apply declares its optional fields ``T | None = None``: then an explicit ``0``, ``False``
  or ``""`` is sent (and owned), and only fields left unset are omitted, as Go's pointer
  fields in apply configurations do. A field whose default is ``0`` or ``False`` itself
  (``replicas: int = 1`` set to 1) is indistinguishable from unset and is not sent.
  ``resourceVersion`` is never sent (an apply is not a read-modify-write), nor an empty
  ``status``. An object with a controller reference never adopts an existing object its
  owner did not create: one with no controller raises :class:`pyctrl.errors.AdoptionRefused`,
  one with another controller :class:`pyctrl.errors.AlreadyOwned` (both terminal, nothing
  written), unless ``adopt=True``. The first apply of an object through this client reads it
  once; later ones send its uid as a precondition instead (:mod:`pyctrl.kube.adoption`).
* :meth:`patch_status` writes only what a reconciler changed in the status: the merge patch
  of ``old``'s encoded status to ``new``'s (:func:`pyctrl.api.status_changes`, with the
  ``equal`` hook, default "unset equals empty"), of the declared status fields only (fields
  a newer controller wrote survive), carrying ``old``'s resourceVersion as a precondition:
  a status someone wrote since ``old`` was read raises :class:`pyctrl.errors.Conflict`
  (409), it is never overwritten from a stale copy. Nothing to write: no request, ``old`` is
  returned. So ``old`` needs a fresh read: a Manager lister's (it waits for the
  controller's own earlier writes through ``client_for_leader()``, see
  :mod:`pyctrl.cache.ownwrites`), never a copy kept from before another write.
* :meth:`add_finalizer` / :meth:`remove_finalizer` add or remove one finalizer by one JSON
  merge patch that replaces ``metadata.finalizers`` with the list plus/minus ``name`` and
  carries ``obj``'s resourceVersion as a precondition: if the object changed since it was
  read (someone else's finalizer may have come or gone) the server answers 409 and
  :class:`pyctrl.errors.Conflict` is raised, so nothing is lost (re-read and retry, e.g.
  with :func:`pyctrl.retry_on_conflict`). They return the object the server stored, or
  ``obj`` itself without any request when there is nothing to change; ``obj`` is never
  changed, and needs a fresh read, as for :meth:`patch_status`. :func:`pyctrl.has_finalizer`
  reads them.
* Errors are the raw client's (:mod:`pyctrl.errors`); a class not declared with
  :func:`pyctrl.api.kind` raises :class:`pyctrl.api.SchemaError`.
"""

from __future__ import annotations

import builtins
from typing import Any, Generic, TypeVar, Unpack, overload

import msgspec

from pyctrl.api.typed import Equal, decode, encode, json_decoder, resource_for, status_changes
from pyctrl.api.typed import unset_equals_empty as _unset_equals_empty
from pyctrl.api.types import Object, Struct
from pyctrl.api.unstructured import Unstructured
from pyctrl.kube.adoption import Claims, apply_owned
from pyctrl.kube.interface import Client, PatchBody, RawGetter, RawLister
from pyctrl.kube.interface import RawObject as Raw
from pyctrl.kube.resource import Resource
from pyctrl.kube.write_options import DeleteArgs, PatchArgs

__all__ = ["TypedClient"]

T = TypeVar("T", bound=Object | Unstructured)


class _Items(msgspec.Struct, Generic[T]):
    items: list[T] = msgspec.field(default_factory=list)


def _list_decoder(cls: object) -> msgspec.json.Decoder[_Items[Any]]:
    found = _LIST_DECODERS.get(cls)
    if found is None:
        found = _LIST_DECODERS.setdefault(cls, json_decoder(_Items[cls]))  # type: ignore[valid-type]
    return found


_LIST_DECODERS: dict[object, msgspec.json.Decoder[_Items[Any]]] = {}


def _where(obj: Object | Unstructured) -> tuple[Resource, str, str | None]:
    if not obj.metadata.name:
        raise ValueError(f"{type(obj).__name__} has no metadata.name")
    return resource_for(type(obj)), obj.metadata.name, obj.metadata.namespace or None


class TypedClient:
    """Typed reads and writes over a raw :class:`~pyctrl.kube.Client` (module docstring)."""

    def __init__(self, client: Client) -> None:
        self.raw = client
        self._claims = Claims()

    # -- reads -------------------------------------------------------------------------
    def get(self, cls: type[T], name: str, namespace: str | None = None) -> T:
        """The object ``name`` (in ``namespace``), as ``cls``; raises NotFound."""
        resource = resource_for(cls)
        if isinstance(self.raw, RawGetter):
            return decode(cls, self.raw.get_raw(resource, name, namespace))
        return decode(cls, self.raw.get(resource, name, namespace))

    def list(self, cls: type[T], namespace: str | None = None, *,
             label_selector: str | None = None,
             field_selector: str | None = None) -> list[T]:
        """Every object of ``cls`` (in ``namespace``) matching the selectors, one LIST."""
        resource = resource_for(cls)
        if isinstance(self.raw, RawLister):
            body = self.raw.list_raw(resource, namespace, label_selector=label_selector,
                                     field_selector=field_selector)
            items: list[T] = _list_decoder(cls).decode(body).items
            return items
        page = self.raw.list(resource, namespace, label_selector=label_selector,
                             field_selector=field_selector)
        return [decode(cls, item) for item in page.get("items") or []]

    # -- writes ------------------------------------------------------------------------
    def create(self, obj: T, *, dry_run: bool = False) -> T:
        """Create ``obj``; the object as stored (uid, resourceVersion, ... filled in)."""
        resource = resource_for(type(obj))
        return self._decoded(obj, self.raw.create(resource, encode(obj),
                                                  obj.metadata.namespace or None,
                                                  dry_run=dry_run))

    def update(self, obj: T) -> T:
        """Replace ``obj`` (its resourceVersion, when set, is the optimistic lock)."""
        resource, _, namespace = _where(obj)
        return self._decoded(obj, self.raw.update(resource, encode(obj), namespace))

    def update_status(self, obj: T) -> T:
        """Replace ``obj``'s status subresource whole (prefer :meth:`patch_status`)."""
        resource, _, namespace = _where(obj)
        return self._decoded(obj, self.raw.update_status(resource, encode(obj), namespace))

    def patch(self, cls: type[T], name: str, patch: PatchBody, namespace: str | None = None,
              **kwargs: Unpack[PatchArgs]) -> T:
        """Send a raw patch body (merge, JSON, strategic or apply) to ``cls``'s object
        ``name``; the patched object, as ``cls``."""
        return decode(cls, self.raw.patch(resource_for(cls), name, patch, namespace, **kwargs))

    def apply(self, obj: T, field_manager: str, *, force: bool = False,
              adopt: bool = False) -> T:
        """Server-side apply ``obj`` as ``field_manager`` (module docstring)."""
        if not field_manager:
            raise ValueError("server-side apply needs a field_manager")
        resource, name, namespace = _where(obj)
        body = encode(obj)
        body["metadata"].pop("resourceVersion", None)
        if body.get("status") == {}:
            del body["status"]
        return self._decoded(obj, apply_owned(
            self.raw, resource, name, namespace, body, field_manager=field_manager,
            force=force, adopt=adopt, claims=self._claims))

    def patch_status(self, old: T, new: T, *, equal: Equal = _unset_equals_empty) -> T:
        """Write what changed between ``old``'s status and ``new``'s (module docstring)."""
        resource, name, namespace = _where(old)
        if isinstance(old, Unstructured) or isinstance(new, Unstructured):
            changes = status_changes(_json_status(old), _json_status(new), equal=equal)
        else:
            before, after = _status_of(old), _status_of(new)
            if before is None and after is None:
                return old
            shown = before if before is not None else after
            assert shown is not None
            declared = type(shown)
            changes = status_changes(_builtins(before), _builtins(after),
                                     known=frozenset(declared.__struct_encode_fields__),
                                     equal=equal)
        if not changes:
            return old
        body: Raw = {"status": changes}
        if old.metadata.resource_version:
            body["metadata"] = {"resourceVersion": old.metadata.resource_version}
        return self._decoded(old, self.raw.patch(resource, name, body, namespace,
                                                 patch_type="merge", subresource="status"))

    def add_finalizer(self, obj: T, name: str) -> T:
        """``obj`` with ``name`` in its finalizers, written (module docstring)."""
        current = list(obj.metadata.finalizers)
        return obj if name in current else self._set_finalizers(obj, [*current, name])

    def remove_finalizer(self, obj: T, name: str) -> T:
        """``obj`` without ``name`` in its finalizers, written (module docstring)."""
        current = list(obj.metadata.finalizers)
        return (obj if name not in current
                else self._set_finalizers(obj, [f for f in current if f != name]))

    def _set_finalizers(self, obj: T, finalizers: builtins.list[str]) -> T:
        resource, name, namespace = _where(obj)
        if not obj.metadata.resource_version:
            raise ValueError("the object has no metadata.resourceVersion: read it first")
        body: Raw = {"metadata": {"finalizers": finalizers,
                                  "resourceVersion": obj.metadata.resource_version}}
        return self._decoded(obj, self.raw.patch(resource, name, body, namespace,
                                                 patch_type="merge"))

    @overload
    def delete(self, obj: T, /, **kwargs: Unpack[DeleteArgs]) -> T | None: ...

    @overload
    def delete(self, obj: type[T], name: str, namespace: str | None = None, /,
               **kwargs: Unpack[DeleteArgs]) -> T | None: ...

    def delete(self, obj: T | type[T], name: str | None = None, namespace: str | None = None,
               /, **kwargs: Unpack[DeleteArgs]) -> T | None:
        """Delete an object (given, or by class, name and namespace); the object as the server
        answered (marked for deletion when finalizers hold it), or None when it answered
        with a Status."""
        if isinstance(obj, type):
            cls, resource = obj, resource_for(obj)
        else:
            cls = type(obj)
            resource, name, namespace = _where(obj)
        if not name:
            raise ValueError("delete needs a name")
        answer = self.raw.delete(resource, name, namespace, **kwargs)
        return None if answer is None else decode(cls, answer)

    @staticmethod
    def _decoded(like: T, answer: Raw) -> T:
        return decode(type(like), answer)


def _status_of(obj: Object | Unstructured) -> Struct | None:
    """``obj.status`` (None when an optional status is unset)."""
    if isinstance(obj, Unstructured):
        raise TypeError("patch_status compares two objects of one form")
    if "status" not in type(obj).__struct_fields__:
        raise TypeError(f"{type(obj).__name__} declares no status")
    status = getattr(obj, "status", None)
    if status is not None and not isinstance(status, Struct):
        raise TypeError(f"{type(obj).__name__}'s status is not a Struct")
    return status


def _json_status(obj: Object | Unstructured) -> dict[str, Any]:
    """An Unstructured's ``status`` (every field is "declared": it holds all it was sent)."""
    if not isinstance(obj, Unstructured):
        raise TypeError("patch_status compares two objects of one form")
    status = obj.get("status")
    return dict(status) if isinstance(status, dict) else {}


def _builtins(status: Struct | None) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(status) if status is not None else {}
    return out
