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
  objects when it is None, "" or "0"; with ``send_initial_events`` it sends the current objects
  as ADDED, then a BOOKMARK annotated ``k8s.io/initial-events-end``), then streams live
  events; an object moving out of a label selector arrives as DELETED. A resourceVersion
  older than the retained history (``history_size`` events, or :meth:`compact`) yields one
  ERROR event (410 Expired) and ends.
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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Unpack

import orjson

from pyctrl.clock import Clock, RealClock
from pyctrl.errors import ApiError, FieldCause, from_status
from pyctrl.kube.interface import Object, PatchType, PropagationPolicy, WatchEvent, WatchStream
from pyctrl.kube.options import INITIAL_EVENTS_END_ANNOTATION, ListArgs, ListOptions, WatchArgs
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


def _copy(obj: Object) -> Object:
    out: Object = orjson.loads(orjson.dumps(obj))
    return out


def _copy_any(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


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


def _name_of(obj: Object) -> str:
    name = _meta(obj).get("name")
    if not name:
        raise ValueError("object has no metadata.name")
    return str(name)


def _invalid_patch(exc: PatchError) -> ApiError:
    return from_status(422, status_body(422, "Invalid", f"the patch could not be applied: {exc}"))


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
                    return _copy_any(result)
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

    # -- tracker --------------------------------------------------------------------------
    def _create(self, resource: Resource, obj: Object, namespace: str | None, *,
                keep_status: bool = False) -> Object:
        new: Object = _copy(obj)
        ns = self._scope(resource, namespace, new)
        meta = _meta(new)
        with self._lock:
            store = self._objects.setdefault(_rkey(resource), {})
            name = meta.get("name")
            if not name and meta.get("generateName"):
                name = meta["generateName"] + "".join(self._rand.choices(_NAME_CHARS, k=5))
                while (ns, name) in store:
                    name = meta["generateName"] + "".join(self._rand.choices(_NAME_CHARS, k=5))
                meta["name"] = name
            if not name:
                raise new_invalid(resource, "", [FieldCause(
                    "metadata.name", "FieldValueRequired",
                    "Required value: name or generateName is required")])
            if meta.get("resourceVersion"):
                raise new_internal_error(
                    "resourceVersion should not be set on objects to be created")
            if (ns, name) in store:
                raise new_already_exists(resource, str(name))
            new["apiVersion"] = new.get("apiVersion") or resource.api_version
            new["kind"] = new.get("kind") or resource.kind
            if resource.namespaced:
                meta["namespace"] = ns
            else:
                meta.pop("namespace", None)
            meta["uid"] = str(uuid.UUID(int=self._rand.getrandbits(128), version=4))
            meta["creationTimestamp"] = self._clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
            meta["generation"] = 1
            for transient in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                meta.pop(transient, None)
            if not keep_status and self.has_status_subresource(resource):
                new.pop("status", None)
            meta["resourceVersion"] = str(self._next_rv())
            store[(ns, str(name))] = new
            self._emit(resource, "ADDED", new, None)
            return _copy(new)

    @staticmethod
    def _spec(obj: Object, exclude_status: bool) -> dict[str, Any]:
        skip = {"metadata", "apiVersion", "kind"} | ({"status"} if exclude_status else set())
        return {k: v for k, v in obj.items() if k not in skip}

    def _replace(self, resource: Resource, key: tuple[str, str], old: Object, new: Object, *,
                 status_only: bool, expected_rv: str | None) -> Object:
        """Store ``new`` over ``old`` like the server's update path; lock held by caller."""
        old_meta = old["metadata"]
        if expected_rv and str(expected_rv) != old_meta["resourceVersion"]:
            raise new_conflict(resource, key[1])
        has_status = self.has_status_subresource(resource)
        if status_only:
            result: Object = _copy(old)
            if new.get("status") is not None:
                result["status"] = _copy_any(new["status"])
            else:
                result.pop("status", None)
        else:
            result = new
            if has_status:
                if "status" in old:
                    result["status"] = _copy_any(old["status"])
                else:
                    result.pop("status", None)
            meta = _meta(result)
            for k in ("uid", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "namespace", "name", "generation"):
                if k in old_meta:
                    meta[k] = old_meta[k]
                else:
                    meta.pop(k, None)
            result["apiVersion"], result["kind"] = old["apiVersion"], old["kind"]
            if self._spec(result, has_status) != self._spec(old, has_status):
                meta["generation"] = int(old_meta.get("generation") or 0) + 1
        meta = _meta(result)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if result == old:
            return _copy(old)  # the server skips writes that change nothing
        meta["resourceVersion"] = str(self._next_rv())
        store = self._objects[_rkey(resource)]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            del store[key]
            self._emit(resource, "DELETED", result, None)
            return _copy(result)
        store[key] = result
        self._emit(resource, "MODIFIED", result, old)
        return _copy(result)

    def _update(self, resource: Resource, ns: str, obj: Object, status_only: bool) -> Object:
        name = _name_of(obj)
        if status_only and not self.has_status_subresource(resource):
            raise new_not_found(resource, name)
        with self._lock:
            old = self._objects.get(_rkey(resource), {}).get((ns, name))
            if old is None:
                raise new_not_found(resource, name)
            new: Object = _copy(obj)
            return self._replace(resource, (ns, name), old, new, status_only=status_only,
                                 expected_rv=_meta(new).get("resourceVersion"))

    def _patch(self, resource: Resource, ns: str, name: str, patch: Any, *, patch_type: str,
               subresource: str | None) -> Object:
        if subresource not in (None, "status") or (
                subresource == "status" and not self.has_status_subresource(resource)):
            raise new_not_found(resource, name)
        if (patch_type == "json") != isinstance(patch, list) or not isinstance(patch,
                                                                                 list | dict):
            raise new_bad_request(f"a {patch_type} patch must be a JSON "
                                  f"{'array' if patch_type == 'json' else 'object'}")
        with self._lock:
            old = self._objects.get(_rkey(resource), {}).get((ns, name))
            if old is None:
                if patch_type == "apply" and subresource is None:
                    body = _copy_any(patch)
                    _meta(body).update({"name": name})
                    return self._create(resource, body, ns or None)
                raise new_not_found(resource, name)
            try:
                patched: Object = _copy_any(
                    json_patch(old, patch) if isinstance(patch, list) else merge_patch(old, patch))
            except PatchError as exc:
                raise _invalid_patch(exc) from exc
            return self._replace(resource, (ns, name), old, patched,
                                 status_only=subresource == "status",
                                 expected_rv=_meta(patched).get("resourceVersion"))

    def _delete(self, resource: Resource, ns: str, name: str,
                preconditions: Mapping[str, str] | None) -> Object:
        with self._lock:
            store = self._objects.get(_rkey(resource), {})
            old = store.get((ns, name))
            if old is None:
                raise new_not_found(resource, name)
            meta = old["metadata"]
            for field_name, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
                want = (preconditions or {}).get(field_name)
                if want and want != meta.get(field_name):
                    raise new_conflict(resource, name, (
                        f"the {label} in the precondition ({want}) does not match the {label} "
                        f"in record ({meta.get(field_name)}). The object might have been "
                        + ("deleted and then recreated" if field_name == "uid" else "modified")))
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp"):
                    return _copy(old)
                marked: Object = _copy(old)
                _meta(marked).update({
                    "deletionTimestamp": self._clock.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "deletionGracePeriodSeconds": 0,
                    "resourceVersion": str(self._next_rv()),
                })
                store[(ns, name)] = marked
                self._emit(resource, "MODIFIED", marked, old)
                return _copy(marked)
            gone: Object = _copy(old)
            del store[(ns, name)]
            _meta(gone)["resourceVersion"] = str(self._next_rv())
            self._emit(resource, "DELETED", gone, None)
            return _copy(gone)

    # -- the Client protocol ----------------------------------------------------------------
    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        ns = self._scope(resource, namespace)
        action = Action("get", resource, ns or None, name)
        result: Object = self._invoke(action, lambda: self._get(resource, name, ns))
        return result

    def list(self, resource: Resource, namespace: str | None = None, *,
             options: ListOptions | None = None, **kwargs: Unpack[ListArgs]) -> Object:
        opts = ListOptions.of(options, kwargs)
        ns = self._scope(resource, namespace, required=False)
        action = Action("list", resource, ns or None, options={
            "label_selector": opts.label_selector, "field_selector": opts.field_selector,
            "limit": opts.limit, "continue_": opts.continue_,
            "resource_version": opts.resource_version,
            "resource_version_match": opts.resource_version_match})
        result: Object = self._invoke(action, lambda: self._list(
            resource, ns, label_selector=opts.label_selector,
            field_selector=opts.field_selector, limit=opts.limit, continue_=opts.continue_))
        return result

    def _list(self, resource: Resource, ns: str, *, label_selector: str | None,
              field_selector: str | None, limit: int | None, continue_: str | None) -> Object:
        try:
            labels = parse_label_selector(label_selector)
            fields = parse_field_selector(field_selector)
        except ValueError as exc:
            raise new_bad_request(str(exc)) from exc
        with self._lock:
            list_rv, start = self._rv, None
            if continue_:
                list_rv, start = _decode_continue(continue_)
                if list_rv < self._compacted:
                    raise new_expired("The provided continue parameter is too old to display "
                                      "a consistent list result.")
            store = self._objects.get(_rkey(resource), {})
            keys = [k for k in sorted(store) if (not ns or k[0] == ns)
                    and (start is None or k > start)]
            matched = [store[k] for k in keys
                       if labels.matches_object(store[k]) and fields.matches(store[k])]
            meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
            if limit and limit > 0 and len(matched) > limit:
                last = matched[limit - 1]["metadata"]
                meta["continue"] = _encode_continue(
                    list_rv, (str(last.get("namespace") or ""), str(last["name"])))
                meta["remainingItemCount"] = len(matched) - limit
                matched = matched[:limit]
            return {"apiVersion": resource.api_version, "kind": f"{resource.kind}List",
                    "metadata": meta, "items": [_copy(o) for o in matched]}

    def watch(self, resource: Resource, namespace: str | None = None, *,
              options: ListOptions | None = None, **kwargs: Unpack[WatchArgs]) -> WatchStream:
        opts = ListOptions.of(options, kwargs)
        resource_version, timeout_seconds = opts.resource_version, opts.timeout_seconds
        label_selector, field_selector = opts.label_selector, opts.field_selector
        initial_events = opts.send_initial_events
        allow_watch_bookmarks = opts.allow_watch_bookmarks or initial_events
        ns = self._scope(resource, namespace, required=False)
        action = Action("watch", resource, ns or None, options={
            "resource_version": resource_version, "timeout_seconds": timeout_seconds,
            "allow_watch_bookmarks": allow_watch_bookmarks, "label_selector": label_selector,
            "field_selector": field_selector, "send_initial_events": initial_events})
        with self._lock:
            self._actions.append(action)
            reactors = list(self._watch_reactors)
        for res, fn in reactors:
            if action.matches("watch", res):
                found = fn(action)
                if found is not None:
                    return found
        try:
            watcher = _Watcher(resource, ns or None, parse_label_selector(label_selector),
                               parse_field_selector(field_selector), allow_watch_bookmarks,
                               FakeWatch(self._clock, timeout_seconds
                                         if self._honor_timeouts else None, self._forget))
        except ValueError as exc:
            raise new_bad_request(str(exc)) from exc
        stream = watcher.stream
        with self._lock:
            if resource_version in (None, "", "0") or initial_events:
                store = self._objects.get(_rkey(resource), {})
                for key in sorted(store):
                    if watcher.wants(store[key]):
                        stream.push({"type": "ADDED", "object": _copy(store[key])})
                if initial_events:
                    stream.push({"type": "BOOKMARK", "object": {
                        "apiVersion": resource.api_version, "kind": resource.kind,
                        "metadata": {"resourceVersion": str(self._rv), "annotations": {
                            INITIAL_EVENTS_END_ANNOTATION: "true"}}}})
            else:
                try:
                    since = int(str(resource_version))
                except ValueError as exc:
                    raise new_bad_request(
                        f"invalid resourceVersion {resource_version!r}") from exc
                if since < self._compacted:
                    stream.push({"type": "ERROR", "object": status_body(
                        410, "Expired",
                        f"too old resource version: {since} ({self._compacted + 1})")})
                    stream.end()
                    return stream
                for rec in self._history:
                    if rec.rv > since and _rkey(rec.resource) == _rkey(resource):
                        event = self._event_for(watcher, rec.type, rec.obj, rec.old)
                        if event is not None:
                            stream.push(event)
            self._watchers.append(watcher)
        return stream

    def _forget(self, stream: FakeWatch) -> None:
        with self._lock:
            self._watchers = [w for w in self._watchers if w.stream is not stream]

    def create(self, resource: Resource, obj: Object, namespace: str | None = None) -> Object:
        ns = self._scope(resource, namespace, obj)
        action = Action("create", resource, ns or None, _meta(_copy(obj)).get("name"), _copy(obj))
        result: Object = self._invoke(action, lambda: self._create(resource, obj, ns or None))
        return result

    def update(self, resource: Resource, obj: Object, namespace: str | None = None) -> Object:
        ns = self._scope(resource, namespace, obj)
        action = Action("update", resource, ns or None, _name_of(obj), _copy(obj))
        result: Object = self._invoke(action, lambda: self._update(resource, ns, obj, False))
        return result

    def update_status(
        self, resource: Resource, obj: Object, namespace: str | None = None
    ) -> Object:
        ns = self._scope(resource, namespace, obj)
        action = Action("update", resource, ns or None, _name_of(obj), _copy(obj), "status")
        result: Object = self._invoke(action, lambda: self._update(resource, ns, obj, True))
        return result

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Object | _ObjectList,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        field_manager: str | None = None,
        force: bool = False,
        subresource: str | None = None,
    ) -> Object:
        ns = self._scope(resource, namespace)
        action = Action("patch", resource, ns or None, name, _copy_any(patch), subresource, {
            "patch_type": patch_type, "field_manager": field_manager, "force": force})
        result: Object = self._invoke(action, lambda: self._patch(
            resource, ns, name, patch, patch_type=patch_type, subresource=subresource))
        return result

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: PropagationPolicy | None = None,
        preconditions: dict[str, str] | None = None,
    ) -> Object | None:
        ns = self._scope(resource, namespace)
        action = Action("delete", resource, ns or None, name, options={
            "propagation_policy": propagation_policy, "preconditions": preconditions})
        result: Object | None = self._invoke(action, lambda: self._delete(
            resource, ns, name, preconditions))
        return result


def _encode_continue(rv: int, key: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"rv": rv, "start": list(key)})).decode()


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise new_bad_request("continue key is not valid") from exc
