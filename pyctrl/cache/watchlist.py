"""WatchList: an informer's initial state as a watch stream (KEP-3157, client-go's WatchListClient).

Contract:

* A lister that can open a streaming list implements :class:`WatchLister`:
  ``watch_list(resource_version=, timeout_seconds=)`` opens a WATCH with
  ``sendInitialEvents=true``, ``resourceVersionMatch=NotOlderThan`` and bookmarks.
  :class:`pyctrl.cache.listwatch.ListWatch` does (through its client, with its selectors and
  ``metadata_only``), and so does :class:`pyctrl.testing.FakeListWatch`.
* The server answers with every current object as an ADDED event, then one BOOKMARK annotated
  ``k8s.io/initial-events-end: "true"`` whose resourceVersion is the state those events make
  up; the same stream then carries live events. :func:`initial_events` consumes the events up
  to that bookmark: it returns the objects (transformed, each key once, in arrival order;
  a MODIFIED or DELETED among them is applied, as to a store) and the bookmark's
  resourceVersion, or None when the server does not understand the request (an ordinary
  BOOKMARK came first: a server that ignores ``sendInitialEvents`` streams the current
  objects too, but never that annotation). An ERROR event raises its Status's
  :class:`pyctrl.errors.ApiError`; a stream that ends before the bookmark raises
  :class:`WatchListIncomplete` (a retryable :class:`pyctrl.errors.ServerError`).
* While every event so far was the ADDED of a new key, the objects are also handed to
  ``stream_to`` in batches of ``batch_size`` as they arrive (the Reflector passes a DeltaFIFO's
  ``stream_initial``, so the informer stores the first objects while the rest are still on
  the wire, as with a paged LIST's pages); after anything else, or once ``stream_to``
  declines, nothing more is handed over. The objects returned always start with those handed
  over, in order, unless a MODIFIED or DELETED came after them.
* :func:`rejects_watch_list` tells an API server that refuses the request itself (the
  WatchList feature gate off: 422 "sendInitialEvents is forbidden"; a server older than the
  feature: 400/422 "resourceVersionMatch is forbidden for watch") from any other failure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from pyctrl.cache.keys import meta_namespace_key
from pyctrl.errors import ApiError, BadRequest, Invalid, ServerError, from_status
from pyctrl.kube.interface import RawObject, WatchEvent, WatchStream
from pyctrl.kube.options import INITIAL_EVENTS_END_ANNOTATION

__all__ = ["WatchListIncomplete", "WatchLister", "initial_events", "rejects_watch_list"]


class WatchLister(Protocol):
    """A lister that can open a streaming list (see module docstring)."""

    def watch_list(self, *, resource_version: str, timeout_seconds: int) -> WatchStream: ...


class WatchListIncomplete(ServerError):
    """The watch-list stream ended before its initial-events-end bookmark."""

    def __init__(self) -> None:
        super().__init__("watch-list stream ended before its initial-events-end bookmark", 0,
                         "WatchListIncomplete")


def rejects_watch_list(err: BaseException) -> bool:
    """Whether ``err`` (from opening a watch-list) says the server refuses the request
    itself, so paged LIST is the way to sync with it."""
    if not isinstance(err, Invalid | BadRequest):
        return False
    return "sendInitialEvents" in err.message or "resourceVersionMatch" in err.message


def initial_events(events: Iterator[WatchEvent], *,
                   transform: Callable[[RawObject], RawObject] | None,
                   stream_to: Callable[[list[RawObject]], bool] | None,
                   batch_size: int,
                   on_event: Callable[[], None] | None = None,
                   ) -> tuple[list[RawObject], str] | None:
    """The objects and resourceVersion up to the initial-events-end bookmark (see the module
    docstring); ``on_event()`` is called for every event (before it is handled) and may raise
    to stop."""
    items: dict[str, RawObject] = {}
    batch: list[RawObject] = []
    batch_size = max(batch_size, 1)
    for event in events:
        if on_event is not None:
            on_event()
        etype = event.get("type")
        obj = event.get("object") or {}
        if etype == "ERROR":
            raise from_status(int(obj.get("code") or 500), obj)
        if etype == "BOOKMARK":
            md = obj.get("metadata") or {}
            if (md.get("annotations") or {}).get(INITIAL_EVENTS_END_ANNOTATION) != "true":
                return None
            if stream_to is not None and batch:
                stream_to(batch)
            return list(items.values()), str(md.get("resourceVersion") or "")
        if transform is not None:
            obj = transform(obj)
        key = meta_namespace_key(obj)
        if etype == "ADDED" and key not in items:
            items[key] = obj
            if stream_to is not None:
                batch.append(obj)
                if len(batch) >= batch_size:
                    if not stream_to(batch):
                        stream_to = None
                    batch = []
            continue
        stream_to, batch = None, []  # no longer a plain sequence of new objects
        if etype == "DELETED":
            items.pop(key, None)
        elif etype in ("ADDED", "MODIFIED"):
            items[key] = obj
        else:
            raise ApiError(f"unexpected watch event type {etype!r} in a watch-list",
                           reason="WatchDecodeError")
    raise WatchListIncomplete
