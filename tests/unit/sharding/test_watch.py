"""ShardWatch: every replica watches the Leases from its start, so a new leader plans at once.

FakeClient + FakeClock: b's shard Lease is last renewed when the watch starts (its 15 s run
out at +15 s); the replica becomes leader at +20 s (as after its leader was killed).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager

from pyctrl.kube import CONFIGMAPS, LEASES
from pyctrl.leaderelection import (
    LeaderCallbacks,
    LeaderElectionOptions,
    LeaderElector,
    LeaseLock,
)
from pyctrl.sharding import Sharder, ShardWatch
from pyctrl.sharding.watch import _Handler
from pyctrl.testing import FakeClient, FakeClock
from tests.threads import running
from tests.unit.sharding.helpers import DRAIN, NS, SHARD, configmap, lease, options, two_shards
from tests.waiting import poll


@contextmanager
def _watching(watch: ShardWatch) -> Iterator[None]:
    with running(watch.run, name="watch") as stop:
        assert watch.wait_for_sync(stop)
        yield


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
        LeaderElectionOptions(lock=LeaseLock(client, "system", "mirror-sharder", "me"),
                              lease_duration=15, renew_deadline=10, retry_period=2,
                              regain_after_fence=False),
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


def _renewed(watch: ShardWatch, shard: str) -> bool:
    """Whether the membership saw ``shard``'s Lease at its renewal ``t1``."""
    seen = watch.membership._seen.get(f"mirror-shard-{shard}")
    return seen is not None and seen.fingerprint[2] == "t1"


def test_only_lease_changes_and_relabels_wake_the_sharder() -> None:
    """A data (status-like) write and a live shard's renewal wake nothing; an add, a relabel
    and a released Lease do: exactly three wakes (before, every object update woke a pass
    over all objects, and so did every renewal: ~2 a second at 3 shards)."""
    clock = FakeClock()
    client, _ = two_shards(clock)
    watch = ShardWatch(client, options("leader"), clock=clock)
    wakes: list[int] = []
    watch.subscribe(lambda: wakes.append(1))
    with _watching(watch):
        settled = len(wakes)
        obj = copy.deepcopy(client.get_object(CONFIGMAPS, "cm-1", NS))
        obj["data"] = {"k": "changed"}  # labels as they were
        rv = client.update(CONFIGMAPS, obj)["metadata"]["resourceVersion"]
        assert poll(lambda: any(o["metadata"]["resourceVersion"] == rv
                                for o in watch.objects()), timeout=5)
        client.add_object(CONFIGMAPS, configmap("marker"))
        obj = copy.deepcopy(client.get_object(CONFIGMAPS, "cm-1", NS))
        obj["metadata"]["labels"][SHARD] = "elsewhere"
        client.update(CONFIGMAPS, obj)

        def relabelled() -> bool:
            got = {o["metadata"]["name"]: o for o in watch.objects()}
            return "marker" in got and got["cm-1"]["metadata"]["labels"][SHARD] == "elsewhere"

        assert poll(relabelled, timeout=5)
        assert poll(lambda: len(wakes) >= settled + 2, timeout=5)
        client.update(LEASES, lease("a", renew="t1", duration=60))  # a renewal: no wake
        assert poll(lambda: _renewed(watch, "a"), timeout=5)
        client.update(LEASES, lease("b", holder="", renew="t1"))  # b released: a wake
        assert poll(lambda: len(wakes) >= settled + 3, timeout=5)
        assert watch.membership.alive() == frozenset({"a"})
        assert len(wakes) == settled + 3


def test_an_object_update_wakes_only_when_its_shard_or_drain_label_changed() -> None:
    clock = FakeClock()
    watch = ShardWatch(FakeClient(clock), options("leader"), clock=clock)
    wakes: list[int] = []
    watch.subscribe(lambda: wakes.append(1))
    handler = _Handler(watch)  # what the objects' informer calls
    old = configmap("cm", {SHARD: "a", "app": "x"})
    status_only = copy.deepcopy(old)
    status_only["metadata"]["resourceVersion"] = "7"
    other_label = configmap("cm", {SHARD: "a", "app": "y"})
    handler.on_update(old, status_only)
    handler.on_update(old, other_label)
    assert wakes == []
    handler.on_update(old, configmap("cm", {SHARD: "b", "app": "x"}))
    handler.on_update(old, configmap("cm", {SHARD: "a", DRAIN: "true", "app": "x"}))
    handler.on_update(old, configmap("cm", {"app": "x"}))
    assert wakes == [1, 1, 1]


def test_objects_are_listed_and_watched_metadata_only_and_typed_as_the_resource() -> None:
    clock = FakeClock()
    client, owners = two_shards(clock)
    watch = ShardWatch(client, options("leader"), clock=clock)
    with _watching(watch):
        objects = watch.objects()
    assert {o["metadata"]["name"] for o in objects} == set(owners)
    assert {(o["apiVersion"], o["kind"]) for o in objects} == {("v1", "ConfigMap")}
    assert all(set(o) == {"apiVersion", "kind", "metadata"} for o in objects)
    reads = [a for a in client.actions
             if a.resource == CONFIGMAPS and a.verb in ("list", "watch")]
    assert reads and all(a.options["metadata_only"] for a in reads)


def test_a_refused_write_wakes_the_sharder_at_the_next_version_of_its_object() -> None:
    """``wake_on_change``: a key whose cached version is the refused one wakes at that
    object's next update (a status-like write, which alone wakes nobody) and only once; a key
    the cache already holds newer wakes at once; an unrelated update wakes nobody, and a
    delete forgets the key (nothing is kept for objects that are gone)."""
    clock = FakeClock()
    client, _ = two_shards(clock)
    watch = ShardWatch(client, options("leader"), clock=clock)
    wakes: list[int] = []
    watch.subscribe(lambda: wakes.append(1))

    def cached_rv(name: str) -> str | None:
        got = {o["metadata"]["name"]: o for o in watch.objects()}
        return got[name]["metadata"]["resourceVersion"] if name in got else None

    def data_write(name: str) -> str:
        obj = copy.deepcopy(client.get_object(CONFIGMAPS, name, NS))
        obj["data"] = {"k": obj["metadata"]["resourceVersion"]}  # labels as they were
        rv: str = client.update(CONFIGMAPS, obj)["metadata"]["resourceVersion"]
        assert poll(lambda: cached_rv(name) == rv, timeout=5)
        return rv

    with _watching(watch):
        settled = len(wakes)
        watch.wake_on_change({f"{NS}/cm-1": str(cached_rv("cm-1")),
                              f"{NS}/cm-4": str(cached_rv("cm-4"))})
        assert len(wakes) == settled, "the cache holds the refused version: nothing newer yet"
        data_write("cm-2")
        assert len(wakes) == settled, "another object's status write"
        data_write("cm-1")
        assert poll(lambda: len(wakes) == settled + 1, timeout=5)
        data_write("cm-1")
        watch.wake_on_change({f"{NS}/cm-3": "1"})  # the cache holds cm-3 newer than "1"
        assert len(wakes) == settled + 2, "one wake per refused write, at once when newer"
        client.delete(CONFIGMAPS, "cm-4", NS)
        assert poll(lambda: cached_rv("cm-4") is None and len(wakes) == settled + 3,
                    timeout=5)
        assert watch._awaited == {}
