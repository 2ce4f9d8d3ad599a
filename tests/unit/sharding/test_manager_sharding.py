"""Manager(sharding=...): the sharded controller's informer is label-filtered, its reconciler
hands drained objects over, writes are fenced by the shard Lease, the sharder needs the lead."""

from __future__ import annotations

from pyctrl import FencedClient, Manager
from pyctrl.kube import CONFIGMAPS, SECRETS
from pyctrl.sharding import Sharder, ShardReconciler
from pyctrl.testing import FakeClient, FakeClock
from tests.unit.sharding.helpers import options


def _manager() -> Manager:
    clock = FakeClock()
    return Manager(FakeClient(clock), clock=clock, metrics_bind_address="0",
                   health_probe_bind_address="0", runtime_metrics=False,
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
    entries = [e for e in m._runnables if isinstance(e.runnable, Sharder)]
    assert len(entries) == 1 and entries[0].needs_leader
    assert isinstance(m.client_for_leader(), FencedClient)
    assert m.shard_elector.holds_lease() is False
