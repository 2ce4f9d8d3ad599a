"""ListWatch: the calls a Reflector needs, bound to one resource and scope.

Contract: a :class:`ListerWatcher` lists (one page per call) and opens watches for a single
resource in a single scope (namespace or all) with fixed label/field selectors. The Reflector
adds paging, resourceVersion bookkeeping and retries; fakes in ``pyctrl.testing`` implement
this protocol to script 410s, dropped streams, silence, bookmarks and server errors.

Optionally a lister also offers ``list_pages(limit=, resource_version=)`` (see
:class:`PageLister`): a generator of the pages of one paged LIST, ending with the page that
has no ``continue`` token; the Reflector prefers it. :func:`sequential_pages` builds it from
``list``. :meth:`ListWatch.list_pages` over a :class:`pyctrl.kube.interface.RawLister`
client (one with ``list_raw``: the RESTClient) pipelines: once page N's body has arrived,
its ``continue`` token is read from the head of the body (the server writes ``metadata``
before ``items``) and page N+1 is requested by one background thread while page N is
decoded and consumed. The token is checked against the decoded page; a wrong guess is
discarded and the right page requested. Errors (410 on a continue included) are raised from
``next()`` exactly as ``list`` raises them, for the page they belong to. The first page is
requested on the caller's thread and every later one on a single background thread (so a
client with a connection per thread uses two connections for the whole LIST, not one per
page). At most one request is in flight; closing the generator (or its end, or an error)
joins the background thread, so no thread outlives it. Each page is decoded and handed to
the consumer with Python's cyclic garbage collector paused
(:func:`pyctrl.kube.body.gc_paused`), so the consumer's transform runs before a collection
walks the fresh objects; the collector resumes when the consumer asks for the next page,
before that page is awaited.

:meth:`ListWatch.watch_list` opens the streaming list of :mod:`pyctrl.cache.watchlist` (a
WATCH with ``send_initial_events``) straight through the client, even in a subclass that
overrides ``watch``.

With ``metadata_only=True`` every LIST and WATCH asks for ``PartialObjectMetadata`` (see
:class:`pyctrl.kube.ListOptions`): pages and events carry only each object's metadata, typed
``meta.k8s.io/v1`` ``PartialObjectMetadata`` (or the full objects, from a server that cannot
convert); the informer factory retypes and reduces them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from queue import SimpleQueue
from typing import Any, Protocol

import orjson

from pyctrl.kube.body import decode_object, gc_paused
from pyctrl.kube.interface import Client, RawLister, RawObject, WatchStream
from pyctrl.kube.options import ListOptions
from pyctrl.kube.resource import Resource

__all__ = ["ListWatch", "ListerWatcher", "PageLister", "sequential_pages"]

Pages = Generator[RawObject, None, None]

# The list metadata (resourceVersion, continue, remainingItemCount) precedes "items" within
# this many bytes; a continue token is a few hundred bytes at most.
_HEAD_BYTES = 8192


class ListerWatcher(Protocol):
    """One page of LIST, or one WATCH, for a fixed resource and scope."""

    def list(
        self, *, limit: int | None, continue_: str | None, resource_version: str | None
    ) -> RawObject: ...

    def watch(
        self, *, resource_version: str, timeout_seconds: int, allow_watch_bookmarks: bool
    ) -> WatchStream: ...


class PageLister(Protocol):
    """The optional paged-LIST generator a Reflector uses when a lister has it."""

    def list_pages(self, *, limit: int | None, resource_version: str) -> Pages: ...


def sequential_pages(lw: ListerWatcher, *, limit: int | None, resource_version: str) -> Pages:
    """The pages of one LIST, each requested after the previous one was consumed."""
    cont: str | None = None
    while True:
        page = lw.list(limit=limit, continue_=cont,
                       resource_version=None if cont else resource_version)
        yield page
        cont = (page.get("metadata") or {}).get("continue") or None
        if not cont:
            return


@dataclass(frozen=True)
class ListWatch:
    """A :class:`ListerWatcher` (and :class:`PageLister`) over a :class:`pyctrl.kube.Client`."""

    client: Client
    resource: Resource
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    metadata_only: bool = False

    @property
    def _selectors(self) -> ListOptions:
        return ListOptions(label_selector=self.label_selector,
                           field_selector=self.field_selector,
                           metadata_only=self.metadata_only)

    def list(
        self, *, limit: int | None, continue_: str | None, resource_version: str | None
    ) -> RawObject:
        return self.client.list(self.resource, self.namespace, options=self._selectors,
                                limit=limit, continue_=continue_,
                                resource_version=resource_version)

    @property
    def lists_bytes(self) -> bool:
        """Whether :meth:`decoded_pages` reads the response bodies itself (a client with
        ``list_raw``, and no subclass overriding ``list``), so ``decode`` applies."""
        return isinstance(self.client, RawLister) and type(self).list is ListWatch.list

    def list_pages(self, *, limit: int | None, resource_version: str) -> Pages:
        """The pages of one LIST, pipelined when possible (see module docstring)."""
        return self.decoded_pages(limit=limit, resource_version=resource_version,
                                  decode=decode_object)

    def decoded_pages(self, *, limit: int | None, resource_version: str,
                      decode: Callable[[bytes], RawObject]) -> Pages:
        """:meth:`list_pages` with each body decoded by ``decode`` when :attr:`lists_bytes`
        (a typed informer's decoder), else the pages as ``list`` returns them."""
        client = self.client
        if not isinstance(client, RawLister) or not self.lists_bytes:
            # A subclass that overrides list() must keep being asked for every page.
            return sequential_pages(self, limit=limit, resource_version=resource_version)
        selectors = self._selectors

        def fetch(cont: str | None) -> bytes:
            return client.list_raw(self.resource, self.namespace, options=selectors,
                                   limit=limit, continue_=cont,
                                   resource_version=None if cont else resource_version)

        return pipelined_pages(fetch, name=f"list-prefetch-{self.resource.plural}",
                               decode=decode)

    def watch(
        self, *, resource_version: str, timeout_seconds: int, allow_watch_bookmarks: bool
    ) -> WatchStream:
        return self.client.watch(self.resource, self.namespace, options=self._selectors,
                                 resource_version=resource_version,
                                 timeout_seconds=timeout_seconds,
                                 allow_watch_bookmarks=allow_watch_bookmarks)

    def watch_list(self, *, resource_version: str, timeout_seconds: int) -> WatchStream:
        """A WATCH that first streams the current objects, ended by the initial-events-end
        bookmark (see :mod:`pyctrl.cache.watchlist`)."""
        return self.client.watch(self.resource, self.namespace, options=self._selectors,
                                 resource_version=resource_version,
                                 timeout_seconds=timeout_seconds, send_initial_events=True)


class _Fetcher:
    """Page requests on one background thread, one at a time.

    One thread serves every continue of a LIST, so a transport that keeps a connection per
    thread (the RESTClient's) opens one connection for them all, not one per page.
    """

    def __init__(self, fetch: Callable[[str | None], bytes], name: str) -> None:
        self._fetch = fetch
        self._name = name
        self._requests: SimpleQueue[str | None] = SimpleQueue()
        self._results: SimpleQueue[tuple[bytes | None, BaseException | None]] = SimpleQueue()
        self._taken = threading.Semaphore(0)
        self._thread: threading.Thread | None = None
        self.pending = False  # a request was submitted and its result not taken yet

    def submit(self, cont: str) -> None:
        """Request the page after ``cont`` (none may be pending); returns once the background
        thread has taken the request.

        That thread then holds the GIL and keeps it until the request's first blocking call
        (the send), so the caller's next CPU-bound step (decoding the current page: orjson
        never releases the GIL) overlaps the server's work on the next page instead of
        delaying the request until it is done.
        """
        assert not self.pending
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        self.pending = True
        self._requests.put(cont)
        self._taken.acquire()

    def result(self) -> bytes:
        """Wait for the pending request's body; its error is raised here."""
        self.pending = False
        body, err = self._results.get()
        if err is not None:
            raise err
        assert body is not None
        return body

    def discard(self) -> None:
        """Wait for the pending request (if any) and drop its answer."""
        if self.pending:
            self.pending = False
            self._results.get()

    def close(self) -> None:
        """End the thread once its current request (if any) is done, and join it."""
        if self._thread is not None:
            self._requests.put(None)
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while (cont := self._requests.get()) is not None:
            self._taken.release()
            try:
                self._results.put((self._fetch(cont), None))
            except BaseException as err:  # handed to the consumer by result()
                self._results.put((None, err))


def pipelined_pages(fetch: Callable[[str | None], bytes], *, name: str,
                    decode: Callable[[bytes], RawObject] = decode_object) -> Pages:
    """Pages of one LIST from ``fetch(continue_or_None) -> body``, next page prefetched;
    ``decode`` turns a body into the page (a typed informer's decodes its items typed)."""
    body = fetch(None)
    fetcher = _Fetcher(fetch, name)
    try:
        while True:
            guess = continue_token(body)
            if guess:
                fetcher.submit(guess)
            with gc_paused():
                page = decode(body)
                del body
                cont = (page.get("metadata") or {}).get("continue") or None
                guessed = cont == guess
                if guessed:
                    # Still paused: the consumer stores the page before asking for the next.
                    yield page
            if not guessed:
                # The head said otherwise (or nothing): drop the speculative request.
                fetcher.discard()
                if cont:
                    fetcher.submit(cont)
                yield page
            del page
            if not fetcher.pending:
                return
            body = fetcher.result()
    finally:
        fetcher.close()


def continue_token(body: bytes) -> str | None:
    """The ``metadata.continue`` of a JSON list body, read from its head; None if unsure."""
    at = body.find(b'"items":', 0, _HEAD_BYTES)
    if at <= 0:
        return None
    head = body[:at].rstrip()
    if not head.endswith(b","):
        return None
    try:
        obj: Any = orjson.loads(head[:-1] + b"}")
    except orjson.JSONDecodeError:
        return None
    md = obj.get("metadata") if isinstance(obj, dict) else None
    cont = md.get("continue") if isinstance(md, dict) else None
    return cont if isinstance(cont, str) and cont else None
