"""ShardingOptions: which controller is sharded, who this replica is, and the label names.

Contract: an options object is immutable and valid once built. It names

* ``controller``: the sharded controller (a Builder name, e.g. ``cronjob``); it appears in
  every label key below, so several controllers can be sharded independently;
* ``shard_id``: this replica's shard (the pod name), used as label value and lease identity:
  lowercase alphanumerics, ``-`` and ``.``, at most 63 characters;
* ``resource``: the kind whose objects are spread over the shards;
* ``lease_namespace``: where the shard Leases (and the leader Lease) live;
* ``namespaces``: the object namespaces the sharder assigns (empty: all);
* ``owned``: resources whose objects follow their controller owner's shard (e.g. a CronJob's
  Jobs): labelled at create, handed over with their owner, and watched by each shard through
  its own label (see :mod:`pyctrl.sharding.owned`). Empty (the default): owned objects are
  not sharded, every replica watches them all.

Labels (all derived from ``controller``):

* ``shard.sharding.pyctrl.io/<controller>=<shard id>`` on a sharded object: the shard that
  owns it; a shard's informers list/watch only objects with its own value.
* ``drain.sharding.pyctrl.io/<controller>=true`` on a sharded object: the sharder asks the
  current shard to hand it over; that shard acknowledges by removing both labels.
* ``handover.sharding.pyctrl.io/<controller>`` (an annotation) on a sharded object whose
  owned objects (``owned``) are on their way to its new shard: their names, removed by the
  new shard once its cache holds them all.
* ``sharding.pyctrl.io/controller=<controller>`` and ``sharding.pyctrl.io/shard=<shard id>``
  on each shard Lease (``<controller>-shard-<shard id>``): the sharder watches Leases by the
  first label.

Timing (``lease_duration > renew_deadline > 1.2 * retry_period``, as leader election checks
with its default jitter):
a shard fences itself ``renew_deadline`` after its last successful renew; the sharder moves
its objects ``lease_duration`` after it last saw the Lease change. ``on_reconcile(key, start,
end)`` (monotonic seconds), when given, is called after each reconcile of an owned object
(an audit hook: the integration test proves no two shards overlap on one key with it).

``leader_weight`` (1.0, in (0, 1]) scales the sharder's own shard in the ring (see
:class:`pyctrl.sharding.HashRing`): the leader runs the sharder beside its shard, so a weight
below 1 can even out the replicas' CPU where the sharder's passes cost more than measured so
far (at 6000 CronJobs on 3 replicas the leader used no more CPU than the others). It
applies only on the replica that leads; a new leader gives its own shard the smaller share,
and the objects that move go through the usual drain.

``writers`` (50) bounds the sharder's label PATCHes in flight at once: a dead shard's objects
move in one burst, and a label write of a custom resource is not free for the API server (it
validates and re-encodes the whole object: ~3.5 ms each for a CronJob on 2 cores, ~580/s with
16 in flight when idle), so they go out in parallel but bounded. A failover comes while the
survivors work through the same tick, so the sharder's share of a busy API server is what
counts: 16 writers moved ~1000 CronJobs at 110-140/s there, 50 at 260-290/s.
``write_qps``/``write_burst`` (500 / 1000) are the sharder's own client-side rate limit (the
Manager gives a :class:`pyctrl.kube.RESTClient` sharder a client of its own with it): a
failover moves about 1/N of the objects at once, and behind the controllers' limiter (50 qps by
default) 1000 moves would take 20 s. ``write_qps <= 0``: no client-side limit, only
``writers``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pyctrl.kube.resource import Resource

__all__ = ["ShardingOptions", "handover_annotation_key", "shard_label_key"]

_ID = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")
LEASE_CONTROLLER_LABEL = "sharding.pyctrl.io/controller"
LEASE_SHARD_LABEL = "sharding.pyctrl.io/shard"


def shard_label_key(controller: str) -> str:
    """``shard.sharding.pyctrl.io/<controller>`` (:attr:`ShardingOptions.shard_label`), for
    callers outside any shard (a command-line helper has no shard id)."""
    return f"shard.sharding.pyctrl.io/{controller}"


def handover_annotation_key(controller: str) -> str:
    """``handover.sharding.pyctrl.io/<controller>``
    (:attr:`ShardingOptions.handover_annotation`), for callers outside any shard."""
    return f"handover.sharding.pyctrl.io/{controller}"


@dataclass(frozen=True)
class ShardingOptions:
    """How this replica takes part in sharding ``controller`` (see module docstring)."""

    controller: str
    shard_id: str
    resource: Resource
    lease_namespace: str = "default"
    namespaces: tuple[str, ...] = ()
    owned: tuple[Resource, ...] = ()
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    virtual_nodes: int = 1000
    leader_weight: float = 1.0
    writers: int = 50
    write_qps: float = 500.0
    write_burst: int = 1000
    on_reconcile: Callable[[str, float, float], None] | None = None

    def __post_init__(self) -> None:
        for value, what in ((self.controller, "controller"), (self.shard_id, "shard_id")):
            if not _ID.match(value):
                raise ValueError(f"{what} {value!r} must be a lowercase DNS label "
                                 "(a-z, 0-9, '-', '.'; at most 63 characters)")
        if self.resource in self.owned:
            raise ValueError("owned must not name the sharded resource itself")
        if self.virtual_nodes < 1:
            raise ValueError("virtual_nodes must be at least 1")
        if not 0 < self.leader_weight <= 1:
            raise ValueError("leader_weight must be in (0, 1]")
        if self.writers < 1:
            raise ValueError("writers must be at least 1")
        if self.write_qps > 0 and self.write_burst < 1:
            raise ValueError("write_burst must be at least 1 when write_qps > 0")
        if not (self.lease_duration > self.renew_deadline > 1.2 * self.retry_period > 0):
            raise ValueError("need lease_duration > renew_deadline > 1.2 * retry_period > 0")

    @property
    def shard_label(self) -> str:
        """``shard.sharding.pyctrl.io/<controller>``: the owning shard of an object."""
        return shard_label_key(self.controller)

    @property
    def drain_label(self) -> str:
        """``drain.sharding.pyctrl.io/<controller>``: set while an object is handed over."""
        return f"drain.sharding.pyctrl.io/{self.controller}"

    @property
    def handover_annotation(self) -> str:
        """``handover.sharding.pyctrl.io/<controller>``: owned objects on their way over."""
        return handover_annotation_key(self.controller)

    @property
    def selector(self) -> str:
        """The label selector of this shard's informers for ``resource``."""
        return f"{self.shard_label}={self.shard_id}"

    @property
    def lease_selector(self) -> str:
        """The label selector of this controller's shard Leases."""
        return f"{LEASE_CONTROLLER_LABEL}={self.controller}"

    @property
    def lease_name(self) -> str:
        """This replica's shard Lease: ``<controller>-shard-<shard id>``."""
        return f"{self.controller}-shard-{self.shard_id}"

    @property
    def leader_lease_name(self) -> str:
        """The Lease electing the replica that runs the sharder: ``<controller>-sharder``."""
        return f"{self.controller}-sharder"
