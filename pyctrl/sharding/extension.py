"""Sharding: the Manager extension that turns sharding of one controller on.

Contract: ``manager.add_extension(Sharding(options))`` (before the controllers are built)
makes every replica's ``options.controller`` work at once, each on its own shard:

* this replica's shard Lease ``<controller>-shard-<shard id>`` (a :class:`ShardLeaseLock`,
  the options' timing) gates the Manager's controllers instead of leadership
  (``Manager.gate_controllers``: losing it is fatal like losing leadership, and
  ``client_for_leader`` is fenced by it; ``/healthz`` check ``shard-lease``);
* leader election still runs (``Manager.ensure_leader_election``: when none is configured,
  a Lease ``<controller>-sharder`` in ``lease_namespace`` with the options' timing, held as
  ``identity``, default ``<hostname>_<uuid>``) and gates only the ``needs_leader``
  runnables, among them the :class:`Sharder` that labels objects;
* a :class:`ShardWatch` runs on every replica from the start; the sharder's writes go
  through a client of their own (``write_qps``/``write_burst``, when the manager's client is
  a RESTClient; :attr:`Sharding.sharder_client`), fenced by leadership and closed with the
  Manager;
* as a controller hook, for the controller named ``options.controller`` with a ``for_``
  resource: its ``for_`` informers list/watch only objects with this shard's label, an
  ``owns`` watch enqueues only owners in this shard's cache (without the filter each replica
  would reconcile the owners of every shard's owned-object events only to find them not its
  own: at a tick of 6000 CronJobs, two thirds of ~12000 Job events), and its reconciler is
  wrapped in a :class:`ShardReconciler` (drain handover, writes through the shard-fenced
  client). Other controllers are left alone.
* with ``options.owned`` (:mod:`pyctrl.sharding.owned`): ``client_for_leader`` stamps this
  shard's label on the owned objects its controllers create (a :class:`StampingClient`,
  noting them in :attr:`Sharding.record`), the ``owns`` informers of those resources
  list/watch only this shard's label, owners carrying the drain label are not admitted (their
  owned objects leaving this shard's cache are not enqueued nor observed as deleted), and
  the :class:`ShardReconciler` hands the owned objects over with their owner and adopts
  them before it reconciles a newly arrived owner. Without it owned objects are not sharded:
  every replica watches them all.
"""

from __future__ import annotations

from collections.abc import Callable

from pyctrl.extension import ControllerBuild, ExtensionHost
from pyctrl.kube import meta
from pyctrl.kube.fenced import FencedClient
from pyctrl.kube.interface import Client
from pyctrl.kube.resource import Resource
from pyctrl.leaderelection import LeaderElectionOptions, LeaderElector
from pyctrl.reconcile import Reconciler, Request
from pyctrl.sharding.lease import ShardLeaseLock
from pyctrl.sharding.options import ShardingOptions
from pyctrl.sharding.owned import CreateRecord, StampingClient
from pyctrl.sharding.shard import ShardReconciler
from pyctrl.sharding.sharder import Sharder
from pyctrl.sharding.watch import ShardWatch

__all__ = ["Sharding"]


class Sharding:
    """Installs sharding of ``options.controller`` on a Manager (see module docstring)."""

    def __init__(self, options: ShardingOptions, *, identity: str | None = None) -> None:
        self.options = options
        self._identity = identity
        self._manager: ExtensionHost | None = None
        self.shard_elector: LeaderElector | None = None
        self.sharder_client: Client | None = None
        self.record = CreateRecord()  # owned objects this replica created, until handed over

    def install(self, manager: ExtensionHost) -> None:
        o = self.options
        leader = manager.ensure_leader_election(LeaderElectionOptions(
            id=o.leader_lease_name, namespace=o.lease_namespace, identity=self._identity,
            lease_duration=o.lease_duration, renew_deadline=o.renew_deadline,
            retry_period=o.retry_period))
        self.shard_elector = manager.gate_controllers(LeaderElectionOptions(
            lock=ShardLeaseLock(manager.client, o), lease_duration=o.lease_duration,
            renew_deadline=o.renew_deadline, retry_period=o.retry_period, id=o.lease_name,
            regain_after_fence=False), check="shard-lease")
        watch = ShardWatch(manager.client, o, clock=manager.clock, elector=leader)
        manager.add(watch)  # every replica, from the start (see pyctrl.sharding.watch)
        self.sharder_client = self._sharder_client(manager)
        manager.add(Sharder(FencedClient(self.sharder_client, leader, registry=manager.registry),
                            o, watch=watch, clock=manager.clock), needs_leader=True)
        manager.add_controller_hook(self)
        if o.owned:
            manager.add_client_wrapper(lambda client: StampingClient(client, o, self.record))
        self._manager = manager

    def _sharder_client(self, manager: ExtensionHost) -> Client:
        """The sharder's writes get a rate limit of their own when the manager's client is a
        RESTClient: a failover's relabels must not queue behind the controllers' limiter."""
        o = self.options
        return manager.client_with_budget(o.write_qps, o.write_burst,
                                          user_agent="pyctrl-sharder", pool_maxsize=o.writers)

    def _sharded(self, build: ControllerBuild) -> bool:
        return build.name == self.options.controller and build.for_resource is not None

    # -- ControllerHook -------------------------------------------------------------------
    def for_selector(self, build: ControllerBuild) -> str | None:
        return self.options.selector if build.name == self.options.controller else None

    def owned_selector(self, build: ControllerBuild, resource: Resource) -> str | None:
        o = self.options
        return o.selector if self._sharded(build) and resource in o.owned else None

    def admit_owner(self, build: ControllerBuild) -> Callable[[Request], bool] | None:
        if build.for_resource is None or build.name != self.options.controller:
            return None
        stores = [i.get_store() for i in build.informers_for(build.for_resource)]
        if not self.options.owned:
            return lambda request: any(store.get_by_key(str(request)) is not None
                                       for store in stores)
        drain = self.options.drain_label

        def admit(request: Request) -> bool:
            # A draining owner is being handed over: its owned objects leaving this shard's
            # cache (relabelled by the new shard) are not deletions this shard acts on.
            for store in stores:
                owner = store.get_by_key(str(request))
                if owner is not None:
                    return not meta.labels(owner).get(drain)
            return False

        return admit

    def wrap_reconciler(self, build: ControllerBuild, reconciler: Reconciler) -> Reconciler:
        if self._manager is None or not self._sharded(build) or build.for_resource is None:
            return reconciler
        owned = {r: build.reader_for(r) for r in self.options.owned
                 if r in build.owned_resources}
        return ShardReconciler(reconciler, build.reader_for(build.for_resource),
                               self._manager.client_for_leader(), self.options,
                               clock=self._manager.clock, owned=owned,
                               record=self.record if owned else None)
