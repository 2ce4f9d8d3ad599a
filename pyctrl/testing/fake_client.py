"""FakeClient: an in-memory :class:`pyctrl.kube.interface.Client` (an object tracker).

Contract (what the API server does, and so does this):

* Every write takes the next value of one cluster-global counter as its ``resourceVersion``
  (a decimal string). A write that changes nothing (same content as stored) is a no-op: no new
  resourceVersion, no watch event, as on the real server.
* create sets ``metadata.uid``, ``creationTimestamp`` (from the injected Clock),
  ``generation=1`` and ``namespace``; fills ``apiVersion``/``kind``; honours ``generateName``;
  rejects an existing name with AlreadyExists, a missing name with Invalid and a set
  ``resourceVersion`` with an internal error (as etcd3's store does).
* update with a resourceVersion other than the stored one raises Conflict (an empty one updates
  unconditionally); ``generation`` is bumped when anything but metadata/status changes.
* Resources with a status subresource (every resource except ConfigMaps, Secrets, Events,
  Leases and ServiceAccounts unless :meth:`set_status_subresource` says otherwise): create and
  update ignore ``.status``; ``update_status`` and patches of the ``status`` subresource change
  only ``.status`` and never bump generation.
* patch supports ``merge`` and ``json``; ``strategic`` is applied as a merge patch (lists are
  replaced, not merged by key) and ``apply`` as create-or-merge (no managedFields). A
  ``metadata.resourceVersion`` inside a patch is an optimistic-lock precondition.
* delete honours preconditions (uid, resourceVersion -> Conflict) and finalizers (sets
  ``deletionTimestamp`` and keeps the object until an update empties ``finalizers``). There is
  no garbage collection; ``propagation_policy`` is only recorded.
* list filters by namespace and label/field selectors, sorts by namespace/name and pages with
  ``limit``/``continue_``; the List's resourceVersion is the global counter (later pages keep
  the first page's). ``resource_version`` parameters of list are accepted and ignored.
* watch replays retained history after ``resource_version`` (or synthesises ADDED for current
  objects when it is None, "" or "0"), then streams live events; an object moving out of a
  label selector arrives as DELETED. A resourceVersion older than the retained history
  (``history_size`` events, or :meth:`compact`) yields one ERROR event (410 Expired) and ends.
  BOOKMARKs are sent by :meth:`send_bookmarks`; :meth:`end_watches` ends every open stream as a
  server would. Streams end after ``timeout_seconds`` of the Clock's time.
* Reactors: :meth:`prepend_reactor` / :meth:`add_reactor` register ``fn(action)`` that may return
  an object (the call's result), raise an ApiError, or return None to fall through to the next
  reactor and finally the tracker. :attr:`actions` records every call, in order, as
  :class:`Action` (with a deep copy of the object sent).
* Thread-safe; objects returned and stored are deep copies, so callers can not alias the store.
"""

from __future__ import annotations

import base64
import random
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from pyctrl.clock import Clock, RealClock
from pyctrl.errors import ApiError, FieldCause
from pyctrl.kube.interface import Object, PatchType, PropagationPolicy, WatchEvent, WatchStream
from pyctrl.kube.patch import PatchError, json_patch, merge_patch
from pyctrl.kube.resource import Resource
from pyctrl.kube.selectors import parse_field_selector, parse_label_selector
from pyctrl.kube.status import (
    new_already_exists,
    new_bad_request,
    new_conflict,
    new_expired,
    new_internal_error,
    new_invalid,
    new_not_found,
    status_body,
)

__all__ = ["Action", "FakeClient", "FakeWatch", "Reactor", "WatchReactor"]

_NO_STATUS = {("", "configmaps"), ("", "secrets"), ("", "events"), ("events.k8s.io", "events"),
              ("coordination.k8s.io", "leases"), ("", "serviceaccounts")}
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's generateName alphabet
_ObjectList = list[Object]


def _copy(obj: Any) -> Any:
    return orjson.loads(orjson.dumps(obj))


def _meta(obj: Object) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


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


class FakeWatch:
    """A :class:`WatchStream` fed by the fake; ``close()`` works from any thread."""

    def __init__(self, clock: Clock, timeout: float | None,
                 on_close: Callable[[FakeWatch], None] | None = None) -> None:
        self._clock = clock
        self._cond = threading.Condition(threading.Lock())
        self._events: deque[WatchEvent] = deque()
        self._stopped = False
        self._deadline = None if timeout is None else clock.monotonic() + timeout
        self._on_close = on_close

    def push(self, event: WatchEvent) -> None:
        with self._cond:
            if not self._stopped:
                self._events.append(event)
                self._cond.notify_all()

    def end(self) -> None:
        """End the stream as a server would: queued events are still delivered."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._on_close is not None:
            self._on_close(self)

    def close(self) -> None:
        with self._cond:
            self._events.clear()
        self.end()

    @property
    def stopped(self) -> bool:
        with self._cond:
            return self._stopped

    def __iter__(self) -> Iterator[WatchEvent]:
        while True:
            with self._cond:
                while not self._events and not self._stopped:
                    if self._deadline is None:
                        self._cond.wait()  # no time involved: only push/end wake us
                        continue
                    remaining = self._deadline - self._clock.monotonic()
                    if remaining <= 0:
                        self._stopped = True
                        break
                    self._clock.wait(self._cond, remaining)
                if not self._events:
                    break
                event = self._events.popleft()
            yield event
        if self._on_close is not None:
            self._on_close(self)


@dataclass
class _Watcher:
    resource: Resource
    namespace: str | None
    labels: Any
    fields: Any
    bookmarks: bool
    stream: FakeWatch

    def wants(self, obj: Object) -> bool:
        ns = _meta(obj).get("namespace")
        return ((self.namespace is None or ns == self.namespace)
                and self.labels.matches_object(obj) and self.fields.matches(obj))


@dataclass(frozen=True)
class _Record:
    rv: int
    resource: Resource
    type: str
    obj: Object
    old: Object | None


def _rkey(resource: Resource) -> tuple[str, str]:
    return (resource.group, resource.plural)


class FakeClient:
    """The in-memory Client (see module docstring)."""

    def __init__(self, clock: Clock | None = None, *, history_size: int = 10_000,
                 honor_watch_timeouts: bool = True, seed: int = 0) -> None:
        self._clock: Clock = clock if clock is not None else RealClock()
        self._lock = threading.RLock()
        self._rv = 0
        self._objects: dict[tuple[str, str], dict[tuple[str, str], Object]] = {}
        self._history: deque[_Record] = deque(maxlen=history_size)
        self._compacted = 0  # events at or below this resourceVersion are forgotten
        self._watchers: list[_Watcher] = []
        self._status: dict[tuple[str, str], bool] = {}
        self._reactors: list[tuple[str, Resource | str, Reactor]] = []
        self._watch_reactors: list[tuple[Resource | str, WatchReactor]] = []
        self._actions: list[Action] = []
        self._rand = random.Random(seed)
        self._honor_timeouts = honor_watch_timeouts

    # -- test helpers ---------------------------------------------------------------------
    @property
    def actions(self) -> list[Action]:
        """Every call so far, oldest first (a copy)."""
        with self._lock:
            return list(self._actions)

    def clear_actions(self) -> None:
        with self._lock:
            self._actions.clear()

    def prepend_reactor(self, verb: str, resource: Resource | str, fn: Reactor) -> None:
        """Run ``fn`` before every reactor registered so far (see :meth:`Action.matches`)."""
        with self._lock:
            self._reactors.insert(0, (verb, resource, fn))

    def add_reactor(self, verb: str, resource: Resource | str, fn: Reactor) -> None:
        """Run ``fn`` after the reactors registered so far, before the tracker."""
        with self._lock:
            self._reactors.append((verb, resource, fn))

    def prepend_watch_reactor(self, resource: Resource | str, fn: WatchReactor) -> None:
        """``fn(action)`` may return a WatchStream to use instead of the tracker's."""
        with self._lock:
            self._watch_reactors.insert(0, (resource, fn))

    def set_status_subresource(self, resource: Resource, enabled: bool = True) -> None:
        with self._lock:
            self._status[_rkey(resource)] = enabled

    def has_status_subresource(self, resource: Resource) -> bool:
        key = _rkey(resource)
        with self._lock:
            return self._status.get(key, key not in _NO_STATUS)

    def add_object(self, resource: Resource, obj: Object) -> Object:
        """Create ``obj`` without recording an action (seed data); returns the stored copy."""
        return self._create(resource, obj, None, keep_status=True)

    def get_object(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        """Read the stored object without recording an action; raises NotFound."""
        return self._get(resource, name, namespace)

    def list_objects(self, resource: Resource, namespace: str | None = None) -> _ObjectList:
        """Every stored object of ``resource`` (in ``namespace``), sorted, unrecorded."""
        with self._lock:
            store = self._objects.get(_rkey(resource), {})
            return [_copy(store[k]) for k in sorted(store)
                    if namespace is None or k[0] == namespace]

    @property
    def resource_version(self) -> str:
        """The current value of the global resourceVersion counter."""
        with self._lock:
            return str(self._rv)

    def compact(self) -> None:
        """Forget all watch history (watches from an older resourceVersion get 410)."""
        with self._lock:
            self._history.clear()
            self._compacted = self._rv

    def send_bookmarks(self) -> None:
        """Send a BOOKMARK at the current resourceVersion to watches that allowed them."""
        with self._lock:
            for w in self._watchers:
                if w.bookmarks:
                    w.stream.push({"type": "BOOKMARK", "object": {
                        "apiVersion": w.resource.api_version, "kind": w.resource.kind,
                        "metadata": {"resourceVersion": str(self._rv)}}})

    def end_watches(self) -> None:
        """End every open watch stream, as an API server restart or timeout would."""
        with self._lock:
            watchers = list(self._watchers)
        for w in watchers:
            w.stream.end()

    def watch_count(self) -> int:
        """How many watch streams are open."""
        with self._lock:
            return len(self._watchers)

    # -- plumbing ---------------------------------------------------------------------------
    def _invoke(self, action: Action, default: Callable[[], Any]) -> Any:
        with self._lock:
            self._actions.append(action)
            reactors = list(self._reactors)
        for verb, resource, fn in reactors:
            if action.matches(verb, resource):
                result = fn(action)
                if result is not None:
                    return _copy(result)
        return default()

    def _scope(self, resource: Resource, namespace: str | None, obj: Object | None = None,
               required: bool = True) -> str:
        if not resource.namespaced:
            return ""
        ns = namespace or (_meta(obj).get("namespace") if obj is not None else None)
        if obj is not None and namespace and _meta(obj).get("namespace") not in (None, "",
                                                                                  namespace):
            raise new_bad_request("the namespace of the provided object does not match the "
                                  "namespace sent on the request")
        if required and not ns:
            raise ValueError(f"{resource} is namespaced: a namespace is required")
        return str(ns or "")

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _emit(self, resource: Resource, etype: str, obj: Object, old: Object | None) -> None:
        self._history.append(_Record(self._rv, resource, etype, obj, old))
        if len(self._history) == self._history.maxlen:
            self._compacted = max(self._compacted, self._history[0].rv - 1)
        for w in self._watchers:
            if _rkey(w.resource) == _rkey(resource):
                event = self._event_for(w, etype, obj, old)
                if event is not None:
                    w.stream.push(event)

    @staticmethod
    def _event_for(w: _Watcher, etype: str, obj: Object, old: Object | None) -> WatchEvent | None:
        now = w.wants(obj)
        if etype == "MODIFIED" and old is not None:
            was = w.wants(old)
            if was and not now:
                return {"type": "DELETED", "object": _copy(obj)}
            if now and not was:
                return {"type": "ADDED", "object": _copy(obj)}
        return {"type": etype, "object": _copy(obj)} if now else None

    def _get(self, resource: Resource, name: str, namespace: str | None) -> Object:
        ns = self._scope(resource, namespace)
        with self._lock:
            found = self._objects.get(_rkey(resource), {}).get((ns, name))
            if found is None:
                raise new_not_found(resource, name)
            return _copy(found)
