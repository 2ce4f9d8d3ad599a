"""ShardWatch: every replica watches the Leases from its start, so a new leader plans at once.

FakeClient + FakeClock: b's shard Lease is last renewed when the watch starts (its 15 s run
out at +15 s); the replica becomes leader at +20 s (as after its leader was killed).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyctrl.kube import CONFIGMAPS, LEASES
from pyctrl.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElector,
    LeaseLock,
)
from pyctrl.sharding import Sharder, ShardWatch
from pyctrl.testing import FakeClient, FakeClock
from tests.unit.sharding.helpers import NS, SHARD, lease, options, two_shards
from tests.waiting import poll


@contextmanager
def _watching(watch: ShardWatch) -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=watch.run, args=(stop,), name="watch")
    thread.start()
    try:
        assert watch.wait_for_sync(stop)
        yield
    finally:
        stop.set()
        thread.join(10)
        assert not thread.is_alive()


def _owners(client: FakeClient) -> dict[str, str | None]:
    return {o["metadata"]["name"]: (o["metadata"].get("labels") or {}).get(SHARD)
            for o in client.list_objects(CONFIGMAPS, NS)}


def test_a_new_leader_moves_a_dead_shards_objects_on_its_first_pass() -> None:
    clock = FakeClock()
    client, owners = two_shards(clock)
    watch = ShardWatch(client, options("leader"), clock=clock)
    with _watching(watch):
        start = watch.observing_since
        assert start == clock.monotonic()
        clock.step(20)
        # A sharder that starts watching only now sees b's Lease for the first time: alive
        # for another 15 s, so its pass moves nothing - the delay this module removes.
        late = Sharder(client, options("leader"), clock=clock)
        with _watching(late.watch):
            assert late.sync(late.watch.objects()) == []
        sharder = Sharder(client, options("leader"), watch=watch, clock=clock)
        assert sharder.membership.alive() == frozenset({"a"})
        moved = sharder.sync(watch.objects())
    theirs = {n for n, s in owners.items() if s == "b"}
    assert {a.name for a in moved} == theirs and all(a.kind == "assign" for a in moved)
    assert set(_owners(client).values()) == {"a"}


def test_the_warm_up_counts_from_when_the_watch_began() -> None:
    """Past lease_duration of watching, the new leader's first pass may drain already."""
    clock = FakeClock()
    client, _ = two_shards(clock)
    client.add_object(LEASES, lease("c", duration=600))  # a third live shard joins
    watch = ShardWatch(client, options("leader"), clock=clock)
    with _watching(watch):
        clock.step(5)
        client.update(LEASES, lease("b", renew="t1", duration=600))
        # b's renewal observed: the first expiry is a's (60 s), no longer b's (15 s).
        assert poll(lambda: (watch.membership.next_expiry() or 0) > 50, timeout=5)
        clock.step(11)  # 16 s of watching: warm
        sharder = Sharder(client, options("leader"), watch=watch, clock=clock)
        kinds = {a.kind for a in sharder.sync(watch.objects())}
    assert kinds == {"drain"}


def test_the_leader_lease_is_fed_to_the_elector() -> None:
    clock = FakeClock()
    client, _ = two_shards(clock)
    elector = LeaderElector(
        LeaderElectionConfig(LeaseLock(client, "system", "mirror-sharder", "me"),
                             lease_duration=15,
                             renew_deadline=10, retry_period=2),
        LeaderCallbacks(lambda stop: None, lambda: None), clock=clock)
    watch = ShardWatch(client, options("leader"), clock=clock, elector=elector)
    leader = lease("x")
    leader["metadata"] = {"name": "mirror-sharder", "namespace": "system"}
    with _watching(watch):
        assert elector.get_leader() == ""
        client.add_object(LEASES, leader)
        assert poll(lambda: elector.get_leader() == "x", timeout=5)
        other = lease("y")
        other["metadata"] = {"name": "another-lease", "namespace": "system"}
        client.add_object(LEASES, other)  # not the leader Lease: not fed
        leader["spec"]["holderIdentity"] = "z"
        client.update(LEASES, leader)
        assert poll(lambda: elector.get_leader() == "z", timeout=5)
