"""ListWatch: the two calls a Reflector needs, bound to one resource and scope.

Contract: a :class:`ListerWatcher` lists (one page per call) and opens watches for a single
resource in a single scope (namespace or all) with fixed label/field selectors. The Reflector
adds paging, resourceVersion bookkeeping and retries; fakes in ``pyctrl.testing`` implement
this protocol to script 410s, dropped streams, silence, bookmarks and server errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pyctrl.kube.interface import Client, Object, WatchStream
from pyctrl.kube.resource import Resource

__all__ = ["ListWatch", "ListerWatcher"]


class ListerWatcher(Protocol):
    """One page of LIST, or one WATCH, for a fixed resource and scope."""

    def list(
        self, *, limit: int | None, continue_: str | None, resource_version: str | None
    ) -> Object: ...

    def watch(
        self, *, resource_version: str, timeout_seconds: int, allow_watch_bookmarks: bool
    ) -> WatchStream: ...


@dataclass(frozen=True)
class ListWatch:
    """A :class:`ListerWatcher` over a :class:`pyctrl.kube.Client`."""

    client: Client
    resource: Resource
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None

    def list(
        self, *, limit: int | None, continue_: str | None, resource_version: str | None
    ) -> Object:
        return self.client.list(
            self.resource,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            limit=limit,
            continue_=continue_,
            resource_version=resource_version,
        )

    def watch(
        self, *, resource_version: str, timeout_seconds: int, allow_watch_bookmarks: bool
    ) -> WatchStream:
        return self.client.watch(
            self.resource,
            self.namespace,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            allow_watch_bookmarks=allow_watch_bookmarks,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
        )
