"""ShardReconciler: the shard side of sharding, wrapped around a controller's reconciler.

Contract: ``ShardReconciler(inner, source, client, options)`` is a
:class:`pyctrl.reconcile.Reconciler` (``reconcile(request)``) wrapping another.
``source.get(namespace, name)`` reads the shard's label-filtered cache (NotFound when the
object is not there). Per request:

* not in the cache (deleted, or no longer labelled for this shard): ``inner`` runs, so it
  forgets what it kept about the object, as for a deleted object;
* labelled for another shard (a stale cache): skipped;
* carrying the drain label: acknowledged instead of reconciled - one merge patch removes the
  shard and drain labels, with the cached ``resourceVersion`` as precondition (a Conflict is
  raised: the request is retried against newer state). The workqueue never hands one request
  to two workers at once, so every earlier reconcile of it on this shard has returned before
  the acknowledgement; afterwards the cache shows the drain label (and the ack is refused by
  the precondition) or nothing. This shard never acts on the object again until the sharder
  gives it back;
* with ``owned`` sources (``ShardingOptions.owned``; see :mod:`pyctrl.sharding.owned`): the
  acknowledgement also writes the handover list (the owned objects in this shard's cache by
  controller UID, and those ``record`` noted this shard creating, forgotten there only once
  the acknowledgement is written, so a refused one lists them again at its retry; the list
  already on the object; none when there are none),
  and an object carrying a
  handover list is first adopted: not reconciled (requeued after ``ADOPT_RETRY`` seconds,
  and brought back by its owned objects' events) until this shard's cache holds every listed
  object that still exists;
* otherwise ``inner`` runs; ``options.on_reconcile(key, start, end)`` (monotonic; ``key`` is
  ``str(request)``) is called
  after it when set, and a debug log line ``shard reconcile`` carries the same (an audit
  trail across processes: on Linux the monotonic clock is one for the whole host).

Writes go through ``client``: give it the shard-fenced client (``Manager.client_for_leader``
with sharding), so a shard that lost its Lease acknowledges nothing either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import structlog

from pyctrl.cache import CONTROLLER_UID_INDEX
from pyctrl.clock import Clock, RealClock
from pyctrl.errors import NotFound
from pyctrl.kube import meta
from pyctrl.kube.interface import Client, RawObject
from pyctrl.kube.resource import Resource
from pyctrl.reconcile import Reconciler, Request, Result
from pyctrl.sharding.options import ShardingOptions
from pyctrl.sharding.owned import (
    CreateRecord,
    OwnedSource,
    adopt,
    encode_handover,
    handover_of,
    resource_key,
)

__all__ = ["ObjectSource", "ShardReconciler"]

log = structlog.get_logger(__name__)

ADOPT_RETRY = 0.5  # seconds; the owned objects' ADDED events usually come first


class ObjectSource(Protocol):
    """Reads one cached object (a Lister, or listers of several namespaces)."""

    def get(self, namespace: str | None, name: str) -> meta.AnyObject: ...


class ShardReconciler:
    """Reconciles only this shard's objects and hands drained ones over (see docstring)."""

    def __init__(self, inner: Reconciler, source: ObjectSource, client: Client,
                 options: ShardingOptions, *, clock: Clock | None = None,
                 owned: Mapping[Resource, OwnedSource] | None = None,
                 record: CreateRecord | None = None) -> None:
        self.inner = inner
        self._source = source
        self._client = client
        self.options = options
        self._clock: Clock = clock or RealClock()
        self._owned: Mapping[Resource, OwnedSource] = owned or {}
        self._record = record

    def reconcile(self, request: Request) -> Result | None:
        namespace, name = request.namespace, request.name
        try:
            obj = self._source.get(namespace, name)
        except NotFound:
            if self._record is not None:
                self._record.forget(str(request))
            return self.inner.reconcile(request)
        o = self.options
        labels = meta.labels(obj)
        if labels.get(o.shard_label) != o.shard_id:
            return None
        if labels.get(o.drain_label):
            self._acknowledge(obj, namespace, name)
            return None
        if (self._owned and o.handover_annotation in meta.annotations(obj)
                and not adopt(obj, o, self._client, self._owned)):
            log.debug("adopting owned objects", key=str(request), shard=o.shard_id)
            return Result(requeue_after=ADOPT_RETRY)
        start = self._clock.monotonic()
        try:
            return self.inner.reconcile(request)
        finally:
            end = self._clock.monotonic()
            key = str(request)
            log.debug("shard reconcile", key=key, shard=o.shard_id, start=start, end=end)
            if o.on_reconcile is not None:
                o.on_reconcile(key, start, end)

    def _acknowledge(self, obj: meta.AnyObject, namespace: str | None, name: str) -> None:
        o = self.options
        key = f"{namespace}/{name}" if namespace else name
        body: RawObject = {"metadata": {"resourceVersion": meta.resource_version(obj),
                                     "labels": {o.shard_label: None, o.drain_label: None}}}
        if self._owned:
            # The list starts from the one on this cached version (_handed_over) and the write
            # carries its resourceVersion: a name listed meanwhile by someone else (the
            # sharder's sweep, a manual run's add_to_handover) is either in this version or
            # refuses this write (Conflict: retried once the cache has the newer version).
            handed = self._handed_over(obj, key)
            # No list when there is nothing to hand over (an owner moved before its first
            # run): an empty one would only make the new shard write again to remove it.
            body["metadata"]["annotations"] = {
                o.handover_annotation: encode_handover(handed) if handed else None}
        try:
            self._client.patch(o.resource, name, body, namespace)
        except NotFound:
            return
        if self._record is not None:
            # Forgotten only now: a refused acknowledgement (Conflict) is retried and must
            # list the Jobs this shard created that its cache may still not hold.
            self._record.forget(key)
        log.info("drained: handed over", object=key, shard=o.shard_id)

    def _handed_over(self, obj: meta.AnyObject, key: str) -> set[tuple[str, str]]:
        """What the new shard must find before it reconciles ``obj``: the owned objects in
        this shard's cache, those this shard created (maybe not cached yet), and a list
        still on ``obj`` from an earlier move."""
        uid = meta.uid(obj)
        out = handover_of(obj, self.options)
        for resource, source in self._owned.items():
            rkey = resource_key(resource)
            for owned in source.by_index(CONTROLLER_UID_INDEX, uid):
                out.add((rkey, meta.name(owned)))
        if self._record is not None:
            out.update(self._record.names(key))
        return out
