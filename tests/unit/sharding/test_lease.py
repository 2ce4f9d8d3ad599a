"""Shard Leases: labelled on create, renewed by the elector; liveness on the observer's clock."""

from __future__ import annotations

from pyctrl.kube import LEASES
from pyctrl.leaderelection import LeaderCallbacks, LeaderElectionOptions, LeaderElector
from pyctrl.sharding import ShardLeaseLock, ShardMembership
from pyctrl.testing import FakeClient, FakeClock
from tests.unit.sharding.helpers import lease, options


def test_shard_lease_is_created_with_its_labels_and_keeps_them_on_renew() -> None:
    clock = FakeClock()
    client = FakeClient(clock)
    opts = options("pod-a")
    elector = LeaderElector(
        LeaderElectionOptions(lock=ShardLeaseLock(client, opts), lease_duration=15,
                              renew_deadline=10, retry_period=2, regain_after_fence=False),
        LeaderCallbacks(lambda stop: None), clock=clock)
    assert elector._try_acquire_or_renew()
    created = client.get_object(LEASES, "mirror-shard-pod-a", "system")
    assert created["metadata"]["labels"] == {"sharding.pyctrl.io/controller": "mirror",
                                             "sharding.pyctrl.io/shard": "pod-a"}
    assert created["spec"]["holderIdentity"] == "pod-a"
    clock.step(2)
    assert elector._try_acquire_or_renew()
    renewed = client.get_object(LEASES, "mirror-shard-pod-a", "system")
    assert renewed["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    assert renewed["metadata"]["labels"] == created["metadata"]["labels"]


def test_a_shard_is_alive_until_lease_duration_after_it_was_last_seen_changing() -> None:
    clock = FakeClock()
    m = ShardMembership(clock)
    m.observe(lease("a", renew="t0"))
    m.observe(lease("b", renew="t0"))
    assert m.alive() == {"a", "b"}
    clock.step(10)
    m.observe(lease("a", renew="t1"))  # a renewed; b's lease is seen again unchanged
    m.observe(lease("b", renew="t0"))
    assert m.next_expiry() == 5.0
    clock.step(5)
    assert m.alive() == {"a"}, "b unchanged for its lease duration: expired"
    clock.step(9.9)
    assert m.alive() == {"a"}
    clock.step(0.1)
    assert m.alive() == frozenset()
    assert m.next_expiry() is None


def test_released_or_deleted_leases_are_dead_at_once() -> None:
    clock = FakeClock()
    m = ShardMembership(clock)
    m.observe(lease("a"))
    m.observe(lease("b"))
    m.observe(lease("a", holder="", renew="t1"))  # released on a clean stop
    m.forget(lease("b"))
    assert m.alive() == frozenset()


def test_a_lease_without_the_shard_label_is_ignored() -> None:
    m = ShardMembership(FakeClock())
    bad = lease("a")
    del bad["metadata"]["labels"]["sharding.pyctrl.io/shard"]
    m.observe(bad)
    assert m.alive() == frozenset()


def test_view_reads_the_alive_shards_and_their_first_expiry_at_one_instant() -> None:
    clock = FakeClock()  # monotonic 1000
    m = ShardMembership(clock)
    assert m.view() == (frozenset(), None)
    m.observe(lease("a", duration=15))
    m.observe(lease("b", duration=10))
    assert m.view() == (frozenset({"a", "b"}), 1010.0)
    clock.step(10)  # b expires now: the next expiry is a's, an absolute time
    assert m.view() == (frozenset({"a"}), 1015.0)
    assert m.next_expiry() == 5.0


def test_observe_says_whether_who_is_alive_can_have_changed() -> None:
    clock = FakeClock()
    m = ShardMembership(clock)
    assert m.observe(lease("a", duration=15)) is True, "a new Lease"
    assert m.observe(lease("a", duration=15)) is False, "the same spec again"
    clock.step(5)
    assert m.observe(lease("a", renew="t1", duration=15)) is False, "a live shard's renewal"
    assert m.observe(lease("a", renew="t1", duration=10)) is True, "another duration"
    assert m.observe(lease("a", holder="", renew="t1", duration=10)) is True, "released"
    assert m.observe(lease("a", renew="t2", duration=10)) is True, "held again"
    clock.step(11)  # expired without news
    assert m.alive() == frozenset()
    assert m.observe(lease("a", renew="t3", duration=10)) is True, "alive again"
    assert m.observe(lease("nolabel") | {"metadata": {"name": "x"}}) is False
