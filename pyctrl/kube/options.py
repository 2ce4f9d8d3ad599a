"""ListOptions: the query of a LIST or WATCH, written once (apimachinery's ``metav1.ListOptions``).

Contract:

* :class:`ListOptions` is the one description of what a list or watch may ask for; every
  :class:`pyctrl.kube.Client` (the RESTClient, the FencedClient wrapper, the FakeClient) takes
  it as ``options=`` and also the same fields as keywords (:class:`ListArgs` for ``list``,
  :class:`WatchArgs` for ``watch``, typed for mypy through ``**kwargs: Unpack[...]``).
  Keywords override the matching fields of ``options`` (:meth:`ListOptions.of`).
* :meth:`ListOptions.list_query` / :meth:`ListOptions.watch_query` are the API server's
  query parameters, the only place that spells them: unset (None/empty) fields are left out;
  a LIST ignores the watch-only fields; a WATCH ignores ``limit``, ``continue_`` and
  ``resource_version_match`` (the server allows it only with initial events) and asks for
  bookmarks unless ``allow_watch_bookmarks`` is False; ``send_initial_events`` (a streaming
  list: the current objects as ADDED events, then a BOOKMARK annotated
  ``k8s.io/initial-events-end``) implies bookmarks and ``resourceVersionMatch=NotOlderThan``.
* ``metadata_only`` is no query parameter: it asks for each object's metadata only (the
  server's ``PartialObjectMetadata`` form, client-go's metadata client), and
  :meth:`ListOptions.accept` is the ``Accept`` header that spells it. A LIST must ask for
  ``as=PartialObjectMetadataList`` (the API server answers 406 to the object form), a WATCH
  for ``as=PartialObjectMetadata`` (each event carries one object); both fall back to plain
  ``application/json`` for a server that cannot convert (an aggregated API server may not),
  which then sends the full objects: callers that cache metadata reduce those themselves
  (the informer factory does). Converted objects carry ``apiVersion: meta.k8s.io/v1`` and
  ``kind: PartialObjectMetadata`` (``PartialObjectMetadataList`` for the list).
* A test asserts that :class:`ListArgs` and :class:`WatchArgs` name only fields of
  :class:`ListOptions` and together name all of them, so the three cannot drift apart.
  (The options of ``patch`` and ``delete`` are written once too, in
  :mod:`pyctrl.kube.write_options`.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, TypedDict

__all__ = ["INITIAL_EVENTS_END_ANNOTATION", "JSON", "METADATA_LIST_ACCEPT",
           "METADATA_WATCH_ACCEPT", "ListArgs", "ListOptions", "WatchArgs"]

INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end"

JSON = "application/json"
METADATA_LIST_ACCEPT = f"{JSON};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,{JSON}"
METADATA_WATCH_ACCEPT = f"{JSON};as=PartialObjectMetadata;g=meta.k8s.io;v=v1,{JSON}"


class ListArgs(TypedDict, total=False):
    """The keywords ``Client.list`` takes (fields of :class:`ListOptions`)."""

    label_selector: str | None
    field_selector: str | None
    limit: int | None
    continue_: str | None
    resource_version: str | None
    resource_version_match: str | None
    metadata_only: bool


class WatchArgs(TypedDict, total=False):
    """The keywords ``Client.watch`` takes (fields of :class:`ListOptions`)."""

    label_selector: str | None
    field_selector: str | None
    resource_version: str | None
    timeout_seconds: int | None
    allow_watch_bookmarks: bool
    send_initial_events: bool
    metadata_only: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOptions:
    """What a LIST or WATCH asks for (see module docstring)."""

    label_selector: str | None = None
    field_selector: str | None = None
    resource_version: str | None = None
    resource_version_match: str | None = None
    limit: int | None = None
    continue_: str | None = None
    timeout_seconds: int | None = None
    allow_watch_bookmarks: bool = True
    send_initial_events: bool = False
    metadata_only: bool = False

    @classmethod
    def of(cls, options: ListOptions | None = None,
           args: Mapping[str, Any] | None = None) -> ListOptions:
        """``options`` (or the defaults) with ``args`` (keywords of a call) applied on top."""
        base = options if options is not None else cls()
        return replace(base, **args) if args else base

    def list_query(self) -> dict[str, str]:
        """The query parameters of a LIST."""
        query = self._selectors()
        if self.limit is not None and self.limit > 0:
            query["limit"] = str(self.limit)
        if self.continue_:
            query["continue"] = self.continue_
        if self.resource_version is not None:
            query["resourceVersion"] = self.resource_version
        if self.resource_version_match:
            query["resourceVersionMatch"] = self.resource_version_match
        return query

    def watch_query(self) -> dict[str, str]:
        """The query parameters of a WATCH (``watch=true`` included)."""
        query: dict[str, str] = {"watch": "true"}
        if self.allow_watch_bookmarks or self.send_initial_events:
            query["allowWatchBookmarks"] = "true"
        if self.send_initial_events:
            query["sendInitialEvents"] = "true"
            query["resourceVersionMatch"] = "NotOlderThan"
        if self.resource_version is not None:
            query["resourceVersion"] = self.resource_version
        if self.timeout_seconds is not None:
            query["timeoutSeconds"] = str(self.timeout_seconds)
        query.update(self._selectors())
        return query

    def accept(self, *, watch: bool) -> str:
        """The ``Accept`` header of a LIST (``watch=False``) or a WATCH with these options."""
        if not self.metadata_only:
            return JSON
        return METADATA_WATCH_ACCEPT if watch else METADATA_LIST_ACCEPT

    def _selectors(self) -> dict[str, str]:
        query: dict[str, str] = {}
        if self.label_selector:
            query["labelSelector"] = self.label_selector
        if self.field_selector:
            query["fieldSelector"] = self.field_selector
        return query
