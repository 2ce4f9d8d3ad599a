"""Typed informers: LIST pages and watch events decoded once, from the bytes, into a kind's class.

Contract (what ``SharedInformerFactory.informer_for(cls)`` / ``lister_for(cls)`` build on; a
kind class is a :class:`pyctrl.api.Object` subclass):

* :class:`TypedDecoder` decodes with msgspec straight from the response bytes into the class:
  a LIST page as ``{items: list[cls], metadata: ListMeta}`` and a watch line as
  ``{type, object: cls}``: no dict is built for an object on the way. The page it returns is
  the small dict the Reflector reads (``{"items": [...], "metadata": {"resourceVersion",
  "continue"}}``) around the typed items; an event is ``{"type", "object"}`` with a typed
  object for ADDED/MODIFIED/DELETED, and the raw dict (a Status, a bookmark) for ERROR and
  BOOKMARK. Fields the class does not declare are skipped by the decoder, never stored:
  ``metadata.managedFields`` (not in :class:`pyctrl.api.ObjectMeta`) among them, so a typed
  cache needs no managedFields transform. A body or line that is not JSON raises
  :class:`pyctrl.errors.ApiError` with ``reason="DecodeError"`` (``"WatchDecodeError"``)
  naming it: the list or watch fails and the Reflector retries it with backoff (logged), as
  for any failed list.
* An object that does not match its class (a wrong enum value or type, an integer out of its
  bounds, a required field missing) never fails the rest: a page is decoded whole first (the
  fast path), and only when that fails again item by item (each item kept as
  ``msgspec.Raw``), so every other item is decoded as usual and the bad one becomes a
  :class:`~pyctrl.cache.quarantine.Quarantined` stand-in (its metadata and the error) under
  its own key; a watch event's object likewise. Stand-ins are delivered to handlers as
  objects are, and replaced by the object once a later event decodes. An item whose
  metadata does not decode either has no key and is dropped (logged).
* :class:`TypedListWatch` wraps any :class:`~pyctrl.cache.listwatch.ListerWatcher`. Over a
  :class:`~pyctrl.cache.listwatch.ListWatch` whose client hands out bodies (``list_raw``:
  the RESTClient) pages are decoded from their bytes (pipelined as for dicts); a watch that is
  a :class:`pyctrl.kube.watch.HTTPWatchStream` decodes each line typed
  (:meth:`~pyctrl.kube.watch.HTTPWatchStream.decode_with`). Over anything that answers with
  dicts (``pyctrl.testing``'s FakeClient and FakeListWatch) each page and event is encoded
  to JSON and decoded by the same decoder, so tests run the production decode path (and its
  errors) on the fakes' data. ``watch_list`` is offered exactly when the wrapped lister
  offers it.
* :func:`fill_type` is the typed informer's transform, run once on each freshly decoded
  object before anyone else sees it: it sets ``api_version``/``kind`` from the kind when the
  object lacks them (LIST items come without) and interns ``metadata.namespace`` (10k objects
  of one namespace share one string), through ``msgspec.structs.force_setattr`` on the object
  nobody holds yet. After it the object is frozen for good.
* Objects are kept as decoded: frozen, shared by the cache, listers and handlers without a
  copy. Nothing can change them in place, so the cache mutation detector has nothing to
  catch and is never used for a typed informer.
* Unknown fields: a typed object holds only what its class declares; anything else the
  server sent (a newer version's fields, managedFields) is gone from the cache. A write from
  a typed object must therefore be a patch of the fields it sets (a merge patch, a status
  patch, server-side apply of a partial object), never a full PUT (update) of a decoded
  object: that would erase every undeclared field on the server.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import msgspec
import orjson

from pyctrl.cache.listwatch import ListerWatcher, ListWatch, Pages, sequential_pages
from pyctrl.cache.quarantine import Quarantined, StandIns
from pyctrl.errors import ApiError
from pyctrl.kube.body import BULK_BYTES, gc_paused, json_decoder
from pyctrl.kube.interface import RawObject, WatchEvent, WatchStream
from pyctrl.kube.resource import Resource
from pyctrl.kube.watch import HTTPWatchStream

__all__ = ["TypedDecoder", "TypedListWatch", "fill_type"]

T = TypeVar("T")

# What the API server writes first on a line of an object event (type before object).
_OBJECT_EVENTS = frozenset({"ADDED", "MODIFIED", "DELETED"})
_OBJECT_PREFIXES = tuple(b'{"type":"%s",' % t.encode() for t in sorted(_OBJECT_EVENTS))


class _ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""
    continue_: str = msgspec.field(name="continue", default="")


class _Page(msgspec.Struct, Generic[T]):
    items: list[T] | None = None
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


class _RawPage(msgspec.Struct):
    items: list[msgspec.Raw] | None = None
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


class _Event(msgspec.Struct, Generic[T]):
    type: str
    object: T


class _Envelope(msgspec.Struct):
    type: str
    object: msgspec.Raw


class TypedDecoder(Generic[T]):
    """LIST bodies and watch lines straight into ``cls`` (see module docstring)."""

    def __init__(self, cls: type[T]) -> None:
        self.cls = cls
        # Built under one lock (pyctrl.api.json_decoder): msgspec's first use of a type is
        # not thread-safe, and informers start their reflectors at once.
        self._page = json_decoder(_Page[cls])  # type: ignore[valid-type]
        self._event = json_decoder(_Event[cls])  # type: ignore[valid-type]
        self._envelope = json_decoder(_Envelope)
        self._object = json_decoder(cls)
        self._raw_page = json_decoder(_RawPage)
        self._stand_ins = StandIns(cls)

    def page(self, body: bytes) -> RawObject:
        """One LIST page: its typed items (stand-ins for undecodable ones) and its list
        metadata."""
        try:
            if len(body) >= BULK_BYTES:
                with gc_paused():
                    page: _Page[Any] = self._decode_page(body)
            else:
                page = self._decode_page(body)
        except msgspec.DecodeError as err:
            raise ApiError(f"undecodable {self.cls.__name__} list: {err}",
                           reason="DecodeError") from None
        md = page.metadata
        return {"items": page.items or [],
                "metadata": {"resourceVersion": md.resource_version,
                             "continue": md.continue_}}

    def _decode_page(self, body: bytes) -> _Page[Any]:
        try:
            page: _Page[Any] = self._page.decode(body)
            return page
        except msgspec.ValidationError:
            pass  # some item does not match the class: decode them one by one
        page = self._raw_page.decode(body)
        items = [obj for raw in page.items or () if (obj := self.item(raw)) is not None]
        return _Page(items=items, metadata=page.metadata)

    def item(self, raw: bytes | msgspec.Raw) -> Any:
        """One object: an instance of the class, else its stand-in (None: no metadata)."""
        try:
            return self._object.decode(raw)
        except msgspec.ValidationError as err:
            return self._stand_ins.make(raw, err)

    def page_from_dict(self, page: RawObject) -> RawObject:
        """A page a lister answered as a dict, through the same decoder."""
        return self.page(orjson.dumps(page))

    def event(self, line: bytes) -> WatchEvent:
        """One watch line: a typed object for ADDED/MODIFIED/DELETED, else the raw dict."""
        try:
            if line.startswith(_OBJECT_PREFIXES):
                try:
                    event: _Event[Any] = self._event.decode(line)
                    return {"type": event.type, "object": event.object}
                except msgspec.ValidationError:
                    pass  # the object does not match the class: a stand-in, below
            envelope = self._envelope.decode(line)
            if envelope.type in _OBJECT_EVENTS:  # written in another key order, or a stand-in
                obj: RawObject | Quarantined | None = self.item(envelope.object)
                if obj is None:
                    raise msgspec.DecodeError("object without readable metadata")
                return {"type": envelope.type, "object": obj}
            raw: Any = orjson.loads(memoryview(envelope.object))
        except (msgspec.DecodeError, orjson.JSONDecodeError) as err:
            raise ApiError(f"undecodable {self.cls.__name__} watch event: {err}",
                           reason="WatchDecodeError") from None
        return {"type": envelope.type, "object": raw if isinstance(raw, dict) else {}}

    def event_from_dict(self, event: WatchEvent) -> WatchEvent:
        """An event a stream yielded as a dict, through the same decoder."""
        if event.get("type") not in _OBJECT_EVENTS:
            return event
        return self.event(orjson.dumps(event))


class _DecodedStream:
    """A dict-yielding watch stream's events, decoded typed."""

    def __init__(self, inner: WatchStream, decoder: TypedDecoder[Any]) -> None:
        self.inner = inner
        self._decoder = decoder

    def __iter__(self) -> Iterator[WatchEvent]:
        decode = self._decoder.event_from_dict
        for event in self.inner:
            yield decode(event)

    def close(self) -> None:
        self.inner.close()


class TypedListWatch(Generic[T]):
    """A ListerWatcher whose objects are ``cls`` instances (see module docstring)."""

    def __init__(self, inner: ListerWatcher, cls: type[T]) -> None:
        self.inner = inner
        self.cls = cls
        self.decoder: TypedDecoder[T] = TypedDecoder(cls)
        # Read by the Reflector's log lines (a LIST's 404 names the resource).
        self.resource: Resource | None = getattr(inner, "resource", None)

    def list(self, *, limit: int | None, continue_: str | None,
             resource_version: str | None) -> RawObject:
        return self.decoder.page_from_dict(self.inner.list(
            limit=limit, continue_=continue_, resource_version=resource_version))

    def list_pages(self, *, limit: int | None, resource_version: str) -> Pages:
        inner = self.inner
        if isinstance(inner, ListWatch) and inner.lists_bytes:
            return inner.decoded_pages(limit=limit, resource_version=resource_version,
                                       decode=self.decoder.page)
        return self._decoded_pages(limit, resource_version)

    def _decoded_pages(self, limit: int | None, resource_version: str) -> Pages:
        list_pages = getattr(self.inner, "list_pages", None)
        pages: Pages = (list_pages(limit=limit, resource_version=resource_version)
                        if list_pages is not None
                        else sequential_pages(self.inner, limit=limit,
                                              resource_version=resource_version))
        try:
            for page in pages:
                yield self.decoder.page_from_dict(page)
        finally:
            pages.close()

    def _typed(self, stream: WatchStream) -> WatchStream:
        if isinstance(stream, HTTPWatchStream):
            stream.decode_with(self.decoder.event)
            return stream
        return _DecodedStream(stream, self.decoder)

    def watch(self, *, resource_version: str, timeout_seconds: int,
              allow_watch_bookmarks: bool) -> WatchStream:
        return self._typed(self.inner.watch(resource_version=resource_version,
                                            timeout_seconds=timeout_seconds,
                                            allow_watch_bookmarks=allow_watch_bookmarks))

    @property
    def watch_list(self) -> Callable[..., WatchStream] | None:
        """The wrapped lister's streaming list, typed; None when it has none."""
        inner = getattr(self.inner, "watch_list", None)
        if inner is None:
            return None

        def open_typed(*, resource_version: str, timeout_seconds: int) -> WatchStream:
            return self._typed(inner(resource_version=resource_version,
                                     timeout_seconds=timeout_seconds))

        return open_typed


def fill_type(resource: Resource, *, retype: bool = False) -> Callable[[Any], Any]:
    """The typed informer's transform (see module docstring); ``retype``: set the
    resource's apiVersion and kind even over the ones decoded (a metadata-only informer's
    ``PartialObjectMetadata``)."""
    api_version, kind = resource.api_version, resource.kind
    force_setattr = msgspec.structs.force_setattr
    intern = sys.intern

    def fill(obj: Any) -> Any:
        # Only ever given an object just decoded, which no one else holds yet.
        if retype or not obj.kind:
            force_setattr(obj, "kind", kind)
        if retype or not obj.api_version:
            force_setattr(obj, "api_version", api_version)
        md = obj.metadata
        if md.namespace:
            force_setattr(md, "namespace", intern(md.namespace))
        return obj

    return fill
