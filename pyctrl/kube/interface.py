"""The client interface every pyctrl component talks to.

Contract: :class:`Client` is what informers, the leader elector, the event recorder and
controllers depend on. :class:`pyctrl.kube.RESTClient` implements it against a real API
server; :class:`pyctrl.testing.FakeClient` implements it in memory. Objects are plain JSON
dicts (:data:`RawObject`, ``dict[str, Any]``) exactly as the server sends them: the
transport's form. Above it, code deals in ``pyctrl.Object`` (typed kinds and
:class:`pyctrl.api.Unstructured`) through :class:`pyctrl.TypedClient`, which decodes these
dicts (or the response bytes) into them.

* Failures raise :mod:`pyctrl.errors` types (NotFound, Conflict, Gone, ...).
* ``list`` and ``watch`` take a :class:`pyctrl.kube.ListOptions` (``options=``) and/or its
  fields as keywords; ``patch`` and ``delete`` take their options as keywords
  (``patch_type``, ``field_manager``, ``force``, ``subresource``; ``propagation_policy``,
  ``preconditions``). Those keywords are written once, in :mod:`pyctrl.kube.options` and
  :mod:`pyctrl.kube.write_options`.
* ``list`` returns the raw List body: ``{"items": [...], "metadata": {"resourceVersion",
  "continue"}}``; paging is the caller's loop (the Reflector's), driven by ``limit`` and
  ``continue_``. A client that can hand out the undecoded body also implements
  :class:`RawLister` (the RESTClient does; a paged lister pipelines over it), and its GET's
  as :class:`RawGetter` (a typed client decodes it straight into its class).
* ``watch`` returns a :class:`WatchStream`: iterate it for events ``{"type": ..., "object":
  {...}}`` where type is ADDED, MODIFIED, DELETED, BOOKMARK or ERROR (an ERROR's object is a
  Status). Iteration ends when the server closes the stream (e.g. ``timeout_seconds``);
  ``close()`` may be called from another thread to end it early.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, Unpack, runtime_checkable

from pyctrl.kube.options import ListArgs, ListOptions, WatchArgs
from pyctrl.kube.resource import Resource
from pyctrl.kube.write_options import DeleteArgs, PatchArgs, PatchType, PropagationPolicy

__all__ = [
    "Client",
    "PatchBody",
    "PatchType",
    "PropagationPolicy",
    "RawGetter",
    "RawLister",
    "RawObject",
    "WatchEvent",
    "WatchStream",
]

RawObject = dict[str, Any]
WatchEvent = dict[str, Any]
PatchBody = RawObject | list[RawObject]  # a JSON patch is a list; the other patch types an object


class WatchStream(Protocol):
    """An open watch: an iterator of events that can be closed from another thread."""

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


class Client(Protocol):
    """CRUD + list/watch over raw dicts for any resource (see module docstring)."""

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> RawObject: ...

    def list(self, resource: Resource, namespace: str | None = None, *,
             options: ListOptions | None = None, **kwargs: Unpack[ListArgs]) -> RawObject: ...

    def watch(self, resource: Resource, namespace: str | None = None, *,
              options: ListOptions | None = None, **kwargs: Unpack[WatchArgs]) -> WatchStream: ...

    def create(self, resource: Resource, obj: RawObject, namespace: str | None = None, *,
               dry_run: bool = False) -> RawObject: ...

    def update(
        self, resource: Resource, obj: RawObject, namespace: str | None = None
    ) -> RawObject: ...

    def update_status(
        self, resource: Resource, obj: RawObject, namespace: str | None = None
    ) -> RawObject: ...

    def patch(self, resource: Resource, name: str, patch: PatchBody,
              namespace: str | None = None, **kwargs: Unpack[PatchArgs]) -> RawObject: ...

    def delete(self, resource: Resource, name: str, namespace: str | None = None,
               **kwargs: Unpack[DeleteArgs]) -> RawObject | None: ...


@runtime_checkable
class RawLister(Protocol):
    """A client whose LIST can return the undecoded JSON body (errors raised as by ``list``)."""

    def list_raw(self, resource: Resource, namespace: str | None = None, *,
                 options: ListOptions | None = None, **kwargs: Unpack[ListArgs]) -> bytes: ...


@runtime_checkable
class RawGetter(Protocol):
    """A client whose GET can return the undecoded JSON body (errors raised as by ``get``)."""

    def get_raw(self, resource: Resource, name: str, namespace: str | None = None) -> bytes: ...
