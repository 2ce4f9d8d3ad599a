"""The FakeClient's action log and reactor chains (client-go's testing.Fake).

Contract: every call to the FakeClient is recorded as an :class:`Action`, in order, before
anything else happens (:attr:`Reactions.actions` returns a copy). Reactors run in
registration order (``prepend`` puts one first): a reactor may return an object (the call's
result, deep-copied), raise an ApiError, or return None to fall through to the next reactor
and finally the tracker (:meth:`Reactions.invoke`). Watch reactors may return a WatchStream
to use instead of the tracker's (:meth:`Reactions.watch`). Reactors run outside the lock, so
they may call the client.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyctrl.availability import is_unavailable
from pyctrl.errors import ApiError
from pyctrl.kube import answers
from pyctrl.kube.interface import WatchStream
from pyctrl.kube.resource import Resource
from pyctrl.testing.fake_objects import copy_any

__all__ = ["Action", "Reactions", "Reactor", "WatchReactor"]


@dataclass(frozen=True)
class Action:
    """One call made to the fake: ``verb`` is get/list/watch/create/update/patch/delete
    (``update_status`` is verb ``update`` with ``subresource="status"``); ``object`` is the
    body sent (the patch for ``patch``); ``options`` holds the remaining keyword arguments."""

    verb: str
    resource: Resource
    namespace: str | None
    name: str | None = None
    object: Any = None
    subresource: str | None = None
    options: Mapping[str, object] = field(default_factory=dict)

    def matches(self, verb: str, resource: Resource | str) -> bool:
        """``verb``/``resource`` may be ``"*"``; a string resource is a plural, optionally
        ``plural/subresource``."""
        if verb not in ("*", self.verb):
            return False
        if isinstance(resource, Resource):
            return resource == self.resource
        if resource == "*":
            return True
        plural, _, sub = resource.partition("/")
        return plural == self.resource.plural and (not sub or sub == self.subresource)


Reactor = Callable[[Action], Any]
WatchReactor = Callable[[Action], WatchStream | None]


class Reactions:
    """The action log and the reactor chains of one FakeClient (see module docstring)."""

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock
        self._reactors: list[tuple[str, Resource | str, Reactor]] = []
        self._watch_reactors: list[tuple[Resource | str, WatchReactor]] = []
        self._actions: list[Action] = []

    @property
    def actions(self) -> list[Action]:
        with self._lock:
            return list(self._actions)

    def clear(self) -> None:
        with self._lock:
            self._actions.clear()

    def prepend(self, verb: str, resource: Resource | str, fn: Reactor) -> None:
        with self._lock:
            self._reactors.insert(0, (verb, resource, fn))

    def add(self, verb: str, resource: Resource | str, fn: Reactor) -> None:
        with self._lock:
            self._reactors.append((verb, resource, fn))

    def prepend_watch(self, resource: Resource | str, fn: WatchReactor) -> None:
        with self._lock:
            self._watch_reactors.insert(0, (resource, fn))

    def invoke(self, action: Action, default: Callable[[], Any]) -> Any:
        """Record ``action``; the first reactor's non-None answer, else ``default()``."""
        with self._lock:
            self._actions.append(action)
            reactors = list(self._reactors)
        try:
            for verb, resource, fn in reactors:
                if action.matches(verb, resource):
                    result = fn(action)
                    if result is not None:
                        return copy_any(result)
            return default()
        except ApiError as err:
            if not is_unavailable(err):
                answers.note()
            raise
        else:
            answers.note()

    def watch(self, action: Action) -> WatchStream | None:
        """Record the watch ``action``; the first watch reactor's stream, else None."""
        with self._lock:
            self._actions.append(action)
            reactors = list(self._watch_reactors)
        for res, fn in reactors:
            if action.matches("watch", res):
                found = fn(action)
                if found is not None:
                    return found
        return None
