"""FakeClient: an in-memory :class:`pyctrl.kube.interface.Client` (an object tracker).

Contract (what the API server does, and so does this):

* Every write takes the next value of one cluster-global counter as its ``resourceVersion``
  (a decimal string). A write that changes nothing (same content as stored) is a no-op: no new
  resourceVersion, no watch event, as on the real server.
* create sets ``metadata.uid``, ``creationTimestamp`` (from the injected Clock),
  ``generation=1`` and ``namespace``; fills ``apiVersion``/``kind``; honours ``generateName``;
  rejects an existing name with AlreadyExists, a missing name with Invalid and a set
  ``resourceVersion`` with an internal error (as etcd3's store does). ``dry_run=True`` stores
  nothing and returns the object as given (a name made from ``generateName``); the Action's
  ``options`` hold ``{"dry_run": True}`` so a reactor can answer it differently.
* update with a resourceVersion other than the stored one raises Conflict (an empty one updates
  unconditionally); ``generation`` is bumped when anything but metadata/status changes.
* Resources with a status subresource (every resource except ConfigMaps, Secrets, Events,
  Leases and ServiceAccounts unless :meth:`set_status_subresource` says otherwise): create and
  update ignore ``.status``; ``update_status`` and patches of the ``status`` subresource change
  only ``.status`` and never bump generation.
* patch supports ``merge`` and ``json``; ``strategic`` is applied as a merge patch (lists are
  replaced, not merged by key) and ``apply`` as create-or-merge (no managedFields;
  ``metadata.ownerReferences`` merged by uid as the server does, and two controller
  references refused with 422 Invalid). A
  ``metadata.resourceVersion`` inside a patch is an optimistic-lock precondition; a
  ``metadata.uid`` is one too (another uid: 422 Invalid, the uid is immutable; an apply with a
  uid of an object that does not exist: 409 Conflict "uid mismatch"), as the server does.
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
* ``metadata_only`` lists and watches answer as the API server does: a
  ``PartialObjectMetadataList`` of ``PartialObjectMetadata`` items (``meta.k8s.io/v1``), and
  events whose objects are ``PartialObjectMetadata`` (ERROR Statuses unchanged).
  BOOKMARKs are sent by :meth:`send_bookmarks`; :meth:`end_watches` ends every open stream as a
  server would. Streams end after ``timeout_seconds`` of the Clock's time.
* Reactors: :meth:`prepend_reactor` / :meth:`add_reactor` register ``fn(action)`` that may return
  an object (the call's result), raise an ApiError, or return None to fall through to the next
  reactor and finally the tracker. :attr:`actions` records every call, in order, as
  :class:`Action` (with a deep copy of the object sent).
* Thread-safe; objects returned and stored are deep copies, so callers can not alias the store.

The parts live in their own modules, split along these seams: the object tracker
(:mod:`pyctrl.testing.fake_tracker`), the watch streams and their fan-out
(:mod:`pyctrl.testing.fake_watch`) and the action log with its reactors
(:mod:`pyctrl.testing.fake_actions`); this module wires them into the Client and keeps the
import path (``Action``, ``FakeWatch``, ``Reactor`` and ``WatchReactor`` are re-exported).
"""

from __future__ import annotations

import threading
from typing import Unpack

from pyctrl.clock import Clock, RealClock
from pyctrl.errors import NotFound
from pyctrl.kube.interface import PatchBody, RawObject, WatchStream
from pyctrl.kube.options import INITIAL_EVENTS_END_ANNOTATION, ListArgs, ListOptions, WatchArgs
from pyctrl.kube.resource import Resource
from pyctrl.kube.selectors import parse_field_selector, parse_label_selector
from pyctrl.kube.status import new_already_exists, new_bad_request
from pyctrl.kube.write_options import DeleteArgs, DeleteOptions, PatchArgs, PatchOptions
from pyctrl.testing.fake_actions import Action, Reactions, Reactor, WatchReactor
from pyctrl.testing.fake_objects import (
    copy_any,
    copy_object,
    meta_of,
    name_of,
    partial_metadata,
    scope,
)
from pyctrl.testing.fake_tracker import ObjectTracker
from pyctrl.testing.fake_watch import FakeWatch, MetadataWatch, WatchFanOut

__all__ = ["Action", "FakeClient", "FakeWatch", "Reactor", "WatchReactor"]

_ObjectList = list[RawObject]


class FakeClient:
    """The in-memory Client (see module docstring)."""

    def __init__(self, clock: Clock | None = None, *, history_size: int = 10_000,
                 honor_watch_timeouts: bool = True, seed: int = 0) -> None:
        self._clock: Clock = clock if clock is not None else RealClock()
        self._lock = threading.RLock()  # one lock: a write and its watch events are atomic
        self._watches = WatchFanOut(self._clock, self._lock, history_size=history_size,
                                    honor_timeouts=honor_watch_timeouts)
        self._tracker = ObjectTracker(self._clock, self._lock, self._watches, seed=seed)
        self._reactions = Reactions(self._lock)

    # -- test helpers ---------------------------------------------------------------------
    @property
    def actions(self) -> list[Action]:
        """Every call so far, oldest first (a copy)."""
        return self._reactions.actions

    def clear_actions(self) -> None:
        self._reactions.clear()

    def prepend_reactor(self, verb: str, resource: Resource | str, fn: Reactor) -> None:
        """Run ``fn`` before every reactor registered so far (see :meth:`Action.matches`)."""
        self._reactions.prepend(verb, resource, fn)

    def add_reactor(self, verb: str, resource: Resource | str, fn: Reactor) -> None:
        """Run ``fn`` after the reactors registered so far, before the tracker."""
        self._reactions.add(verb, resource, fn)

    def prepend_watch_reactor(self, resource: Resource | str, fn: WatchReactor) -> None:
        """``fn(action)`` may return a WatchStream to use instead of the tracker's."""
        self._reactions.prepend_watch(resource, fn)

    def set_status_subresource(self, resource: Resource, enabled: bool = True) -> None:
        self._tracker.set_status_subresource(resource, enabled)

    def has_status_subresource(self, resource: Resource) -> bool:
        return self._tracker.has_status_subresource(resource)

    def add_object(self, resource: Resource, obj: RawObject) -> RawObject:
        """Create ``obj`` without recording an action (seed data); returns the stored copy."""
        return self._tracker.create(resource, obj, None, keep_status=True)

    def get_object(self, resource: Resource, name: str, namespace: str | None = None) -> RawObject:
        """Read the stored object without recording an action; raises NotFound."""
        return self._tracker.get(resource, name, namespace)

    def list_objects(self, resource: Resource, namespace: str | None = None) -> _ObjectList:
        """Every stored object of ``resource`` (in ``namespace``), sorted, unrecorded."""
        return self._tracker.list_objects(resource, namespace)

    @property
    def resource_version(self) -> str:
        """The current value of the global resourceVersion counter."""
        return str(self._tracker.resource_version)

    def compact(self) -> None:
        """Forget all watch history (watches from an older resourceVersion get 410)."""
        with self._lock:
            self._watches.compact(self._tracker.resource_version)

    def send_bookmarks(self) -> None:
        """Send a BOOKMARK at the current resourceVersion to watches that allowed them."""
        with self._lock:
            self._watches.send_bookmarks(self._tracker.resource_version)

    def end_watches(self) -> None:
        """End every open watch stream, as an API server restart or timeout would."""
        self._watches.end_all()

    def watch_count(self) -> int:
        """How many watch streams are open."""
        return self._watches.count()

    # -- the Client protocol ----------------------------------------------------------------
    def get(self, resource: Resource, name: str, namespace: str | None = None) -> RawObject:
        ns = scope(resource, namespace)
        action = Action("get", resource, ns or None, name)
        result: RawObject = self._reactions.invoke(
            action, lambda: self._tracker.get(resource, name, ns))
        return result

    def list(self, resource: Resource, namespace: str | None = None, *,
             options: ListOptions | None = None, **kwargs: Unpack[ListArgs]) -> RawObject:
        opts = ListOptions.of(options, kwargs)
        ns = scope(resource, namespace, required=False)
        action = Action("list", resource, ns or None, options={
            "label_selector": opts.label_selector, "field_selector": opts.field_selector,
            "limit": opts.limit, "continue_": opts.continue_,
            "resource_version": opts.resource_version,
            "resource_version_match": opts.resource_version_match,
            "metadata_only": opts.metadata_only})
        result: RawObject = self._reactions.invoke(action, lambda: self._tracker.list_page(
            resource, ns, label_selector=opts.label_selector,
            field_selector=opts.field_selector, limit=opts.limit, continue_=opts.continue_))
        if opts.metadata_only and result.get("kind") != "PartialObjectMetadataList":
            result = {**result, "apiVersion": "meta.k8s.io/v1",
                      "kind": "PartialObjectMetadataList",
                      "items": [partial_metadata(o) for o in result.get("items") or []]}
        return result

    def watch(self, resource: Resource, namespace: str | None = None, *,
              options: ListOptions | None = None, **kwargs: Unpack[WatchArgs]) -> WatchStream:
        opts = ListOptions.of(options, kwargs)
        ns = scope(resource, namespace, required=False)
        action = Action("watch", resource, ns or None, options={
            "resource_version": opts.resource_version, "timeout_seconds": opts.timeout_seconds,
            "allow_watch_bookmarks": opts.allow_watch_bookmarks or opts.send_initial_events,
            "label_selector": opts.label_selector, "field_selector": opts.field_selector,
            "send_initial_events": opts.send_initial_events,
            "metadata_only": opts.metadata_only})
        stream = self._watch(action, resource, ns, opts)
        return MetadataWatch(stream) if opts.metadata_only else stream

    def _watch(self, action: Action, resource: Resource, ns: str,
               opts: ListOptions) -> WatchStream:
        resource_version, timeout_seconds = opts.resource_version, opts.timeout_seconds
        label_selector, field_selector = opts.label_selector, opts.field_selector
        initial_events = opts.send_initial_events
        allow_watch_bookmarks = opts.allow_watch_bookmarks or initial_events
        found = self._reactions.watch(action)
        if found is not None:
            return found
        try:
            watcher = self._watches.new_watcher(
                resource, ns or None, parse_label_selector(label_selector),
                parse_field_selector(field_selector), allow_watch_bookmarks, timeout_seconds)
        except ValueError as exc:
            raise new_bad_request(str(exc)) from exc
        stream = watcher.stream
        with self._lock:
            if resource_version in (None, "", "0") or initial_events:
                for obj in self._tracker.stored(resource):
                    if watcher.wants(obj):
                        stream.push({"type": "ADDED", "object": copy_object(obj)})
                if initial_events:
                    stream.push({"type": "BOOKMARK", "object": {
                        "apiVersion": resource.api_version, "kind": resource.kind,
                        "metadata": {"resourceVersion": str(self._tracker.resource_version),
                                     "annotations": {INITIAL_EVENTS_END_ANNOTATION: "true"}}}})
            else:
                try:
                    since = int(str(resource_version))
                except ValueError as exc:
                    raise new_bad_request(
                        f"invalid resourceVersion {resource_version!r}") from exc
                if not self._watches.replay(watcher, since):
                    return stream
            self._watches.add(watcher)
        return stream

    def create(self, resource: Resource, obj: RawObject, namespace: str | None = None, *,
               dry_run: bool = False) -> RawObject:
        ns = scope(resource, namespace, obj)
        action = Action("create", resource, ns or None, meta_of(copy_object(obj)).get("name"),
                        copy_object(obj), options={"dry_run": True} if dry_run else {})
        result: RawObject = self._reactions.invoke(
            action, lambda: self._dry_create(resource, obj, ns) if dry_run
            else self._tracker.create(resource, obj, ns or None))
        return result

    def _dry_create(self, resource: Resource, obj: RawObject, ns: str | None) -> RawObject:
        """A dry-run create: the object as created (name from generateName), stored nowhere;
        AlreadyExists for a taken name, as the server answers."""
        meta = meta_of(obj)
        name = meta.get("name")
        if name:
            try:
                self._tracker.get(resource, str(name), ns or None)
            except NotFound:
                pass
            else:
                raise new_already_exists(resource, str(name))
        result = copy_object(obj)
        if not name:
            meta_of(result)["name"] = f"{meta.get('generateName') or ''}dryrun"
        if resource.namespaced:
            meta_of(result)["namespace"] = ns
        return result

    def update(self, resource: Resource, obj: RawObject, namespace: str | None = None) -> RawObject:
        ns = scope(resource, namespace, obj)
        action = Action("update", resource, ns or None, name_of(obj), copy_object(obj))
        result: RawObject = self._reactions.invoke(
            action, lambda: self._tracker.update(resource, ns, obj, False))
        return result

    def update_status(
        self, resource: Resource, obj: RawObject, namespace: str | None = None
    ) -> RawObject:
        ns = scope(resource, namespace, obj)
        action = Action("update", resource, ns or None, name_of(obj), copy_object(obj),
                        "status")
        result: RawObject = self._reactions.invoke(
            action, lambda: self._tracker.update(resource, ns, obj, True))
        return result

    def patch(self, resource: Resource, name: str, patch: PatchBody,
              namespace: str | None = None, **kwargs: Unpack[PatchArgs]) -> RawObject:
        opts = PatchOptions.of(kwargs)
        ns = scope(resource, namespace)
        action = Action("patch", resource, ns or None, name, copy_any(patch), opts.subresource, {
            "patch_type": opts.patch_type, "field_manager": opts.field_manager,
            "force": opts.force})
        result: RawObject = self._reactions.invoke(action, lambda: self._tracker.patch(
            resource, ns, name, patch, patch_type=opts.patch_type, subresource=opts.subresource))
        return result

    def delete(self, resource: Resource, name: str, namespace: str | None = None,
               **kwargs: Unpack[DeleteArgs]) -> RawObject | None:
        opts = DeleteOptions.of(kwargs)
        ns = scope(resource, namespace)
        action = Action("delete", resource, ns or None, name, options={
            "propagation_policy": opts.propagation_policy, "preconditions": opts.preconditions})
        result: RawObject | None = self._reactions.invoke(action, lambda: self._tracker.delete(
            resource, ns, name, opts.preconditions))
        return result
