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
* otherwise ``inner`` runs; ``options.on_reconcile(key, start, end)`` (monotonic; ``key`` is
  ``str(request)``) is called
  after it when set, and a debug log line ``shard reconcile`` carries the same (an audit
  trail across processes: on Linux the monotonic clock is one for the whole host).

Writes go through ``client``: give it the shard-fenced client (``Manager.client_for_leader``
with sharding), so a shard that lost its Lease acknowledges nothing either.
"""

from __future__ import annotations

from typing import Protocol

import structlog

from pyctrl.clock import Clock, RealClock
from pyctrl.errors import NotFound
from pyctrl.kube.interface import Client, Object
from pyctrl.reconcile import Reconciler, Request, Result
from pyctrl.sharding.options import ShardingOptions

__all__ = ["ObjectSource", "ShardReconciler"]

log = structlog.get_logger(__name__)


class ObjectSource(Protocol):
    """Reads one cached object (a Lister, or listers of several namespaces)."""

    def get(self, namespace: str | None, name: str) -> Object: ...


class ShardReconciler:
    """Reconciles only this shard's objects and hands drained ones over (see docstring)."""

    def __init__(self, inner: Reconciler, source: ObjectSource, client: Client,
                 options: ShardingOptions, *, clock: Clock | None = None) -> None:
        self.inner = inner
        self._source = source
        self._client = client
        self.options = options
        self._clock: Clock = clock or RealClock()

    def reconcile(self, request: Request) -> Result | None:
        namespace, name = request.namespace, request.name
        try:
            obj = self._source.get(namespace, name)
        except NotFound:
            return self.inner.reconcile(request)
        o = self.options
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if labels.get(o.shard_label) != o.shard_id:
            return None
        if labels.get(o.drain_label):
            self._acknowledge(obj, namespace, name)
            return None
        start = self._clock.monotonic()
        try:
            return self.inner.reconcile(request)
        finally:
            end = self._clock.monotonic()
            key = str(request)
            log.debug("shard reconcile", key=key, shard=o.shard_id, start=start, end=end)
            if o.on_reconcile is not None:
                o.on_reconcile(key, start, end)

    def _acknowledge(self, obj: Object, namespace: str | None, name: str) -> None:
        o = self.options
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        body: Object = {"metadata": {"resourceVersion": rv,
                                     "labels": {o.shard_label: None, o.drain_label: None}}}
        try:
            self._client.patch(o.resource, name, body, namespace)
        except NotFound:
            return
        log.info("drained: handed over", object=f"{namespace}/{name}" if namespace else name,
                 shard=o.shard_id)
