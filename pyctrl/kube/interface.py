"""The client interface every pyctrl component talks to.

Contract: :class:`Client` is what informers, the leader elector, the event recorder and
controllers depend on. :class:`pyctrl.kube.RESTClient` implements it against a real API
server; :class:`pyctrl.testing.FakeClient` implements it in memory. Objects are plain JSON
dicts (``dict[str, Any]``) exactly as the server sends them; no generated model classes.

* Failures raise :mod:`pyctrl.errors` types (NotFound, Conflict, Gone, ...).
* ``list`` and ``watch`` take a :class:`pyctrl.kube.ListOptions` (``options=``) and/or its
  fields as keywords; the signature is written once, in :mod:`pyctrl.kube.options`.
* ``list`` returns the raw List body: ``{"items": [...], "metadata": {"resourceVersion",
  "continue"}}``; paging is the caller's loop (the Reflector's), driven by ``limit`` and
  ``continue_``. A client that can hand out the undecoded body also implements
  :class:`RawLister` (the RESTClient does; a paged lister pipelines over it).
* ``watch`` returns a :class:`WatchStream`: iterate it for events ``{"type": ..., "object":
  {...}}`` where type is ADDED, MODIFIED, DELETED, BOOKMARK or ERROR (an ERROR's object is a
  Status). Iteration ends when the server closes the stream (e.g. ``timeout_seconds``);
  ``close()`` may be called from another thread to end it early.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any, Literal, Protocol, Unpack, runtime_checkable

from pyctrl.kube.options import ListArgs, ListOptions, WatchArgs
from pyctrl.kube.resource import Resource

__all__ = [
    "Client",
    "Object",
    "PatchType",
    "PropagationPolicy",
    "RawLister",
    "WatchEvent",
    "WatchStream",
]

Object = dict[str, Any]
WatchEvent = dict[str, Any]
PatchType = Literal["merge", "json", "strategic", "apply"]
PropagationPolicy = Literal["Background", "Foreground", "Orphan"]


class WatchStream(Protocol):
    """An open watch: an iterator of events that can be closed from another thread."""

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


class Client(Protocol):
    """CRUD + list/watch over raw dicts for any resource (see module docstring)."""

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object: ...

    def list(self, resource: Resource, namespace: str | None = None, *,
             options: ListOptions | None = None, **kwargs: Unpack[ListArgs]) -> Object: ...

    def watch(self, resource: Resource, namespace: str | None = None, *,
              options: ListOptions | None = None, **kwargs: Unpack[WatchArgs]) -> WatchStream: ...

    def create(self, resource: Resource, obj: Object, namespace: str | None = None) -> Object: ...

    def update(self, resource: Resource, obj: Object, namespace: str | None = None) -> Object: ...

    def update_status(
        self, resource: Resource, obj: Object, namespace: str | None = None
    ) -> Object: ...

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Object | builtins.list[Object],
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        field_manager: str | None = None,
        force: bool = False,
        subresource: str | None = None,
    ) -> Object: ...

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: PropagationPolicy | None = None,
        preconditions: dict[str, str] | None = None,
    ) -> Object | None: ...


@runtime_checkable
class RawLister(Protocol):
    """A client whose LIST can return the undecoded JSON body (errors raised as by ``list``)."""

    def list_raw(self, resource: Resource, namespace: str | None = None, *,
                 options: ListOptions | None = None, **kwargs: Unpack[ListArgs]) -> bytes: ...
