"""Manager(sharding=...): the sharded controller's informer is label-filtered, its reconciler
hands drained objects over, writes are fenced by the shard Lease, the sharder needs the lead."""

from __future__ import annotations

from kubernetes.client import Configuration

from pyctrl import FencedClient, Manager, ManagerOptions, MetricsOptions, Request
from pyctrl.kube import CONFIGMAPS, SECRETS
from pyctrl.kube.client import RESTClient
from pyctrl.sharding import Sharder, ShardReconciler, ShardWatch
from pyctrl.testing import FakeClient, FakeClock
from tests.unit.sharding.helpers import NS, SHARD, configmap, options

NO_RUNTIME_METRICS = ManagerOptions(metrics=MetricsOptions(runtime_metrics=False))


def _manager() -> Manager:
    clock = FakeClock()
    return Manager(FakeClient(clock), NO_RUNTIME_METRICS, clock=clock,
                   sharding=options("pod-a"))


def test_sharded_controller_watches_only_its_shard_and_wraps_the_reconciler() -> None:
    m = _manager()
    c = m.controller("mirror").for_(CONFIGMAPS).owns(SECRETS).complete(
        lambda req: None)
    names = sorted(i.name for i in m.informers.informers())
    assert names == ["configmaps[shard.sharding.pyctrl.io/mirror=pod-a]", "secrets"]
    assert isinstance(c.reconciler, ShardReconciler)
    other = m.controller("unsharded").for_(SECRETS).complete(lambda req: None)
    try:
        assert not isinstance(other.reconciler, ShardReconciler)
    finally:
        c.queue.shut_down()
        other.queue.shut_down()


def test_leader_election_is_created_for_the_sharder_and_writes_use_the_shard_lease() -> None:
    m = _manager()
    assert m.elector is not None and m.elector.describe() == "system/mirror-sharder"
    assert m.shard_elector is not None
    assert m.shard_elector.describe() == "system/mirror-shard-pod-a"
    entries = [e for e in m.runnables() if isinstance(e.runnable, Sharder)]
    assert len(entries) == 1 and entries[0].needs_leader
    assert isinstance(m.client_for_leader(), FencedClient)
    assert m.shard_elector.holds_lease() is False


def test_every_replica_runs_the_shard_watch_and_the_sharder_plans_from_it() -> None:
    m = _manager()
    watches = [e for e in m.runnables() if isinstance(e.runnable, ShardWatch)]
    assert len(watches) == 1 and not watches[0].needs_leader
    sharder = next(e.runnable for e in m.runnables() if isinstance(e.runnable, Sharder))
    assert isinstance(sharder, Sharder) and sharder.watch is watches[0].runnable


def test_a_rest_client_sharder_gets_a_write_budget_of_its_own() -> None:
    config = Configuration()
    config.host = "https://127.0.0.1:1"
    client = RESTClient(config, qps=5, burst=10)
    clock = FakeClock()
    m = Manager(client, NO_RUNTIME_METRICS, clock=clock,
                sharding=options("pod-a", write_qps=300, write_burst=600))
    try:
        assert len(m._owned_clients) == 1
        own = m._owned_clients[0]
        assert own is not client
        assert (own.rate_limiter.qps, own.rate_limiter.burst) == (300, 600)
    finally:
        client.close()
        for c in m._owned_clients:
            c.close()


def test_owned_object_events_enqueue_only_owners_in_this_shards_cache() -> None:
    # Through complete(): the handler the builder registers on the (unsharded) Secret
    # informer, feeding the controller's own queue.
    m = _manager()
    b = m.controller("mirror").for_(CONFIGMAPS).owns(SECRETS)
    c = b.complete(lambda req: None)
    try:
        b.informers_for(CONFIGMAPS)[0].get_store().add(configmap("mine", {SHARD: "pod-a"}))
        secrets = next(i for i in m.informers.informers() if i.name == "secrets")
        [listener] = secrets._processor.listeners()

        def secret(owner: str) -> dict[str, object]:
            return {"metadata": {"name": f"s-{owner}", "namespace": NS, "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": "u",
                 "controller": True}]}}

        listener.handler.on_add(secret("another-shards"), False)
        listener.handler.on_add(secret("mine"), False)
        assert len(c.queue) == 1 and c.queue.get() == Request(NS, "mine")
    finally:
        c.queue.shut_down()
    assert m.controller("unsharded").for_(SECRETS)._in_shard(SECRETS) is None
