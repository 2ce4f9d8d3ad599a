"""Sharder: assignment by ring, immediate moves off dead shards, drain handshake on live ones.

The sharder's pass (:meth:`Sharder.sync`) and the shards' :class:`ShardReconciler` run here
against one FakeClient, with shard liveness driven by a FakeClock.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from pyctrl.controller import Result
from pyctrl.errors import Conflict, NotFound
from pyctrl.kube import CONFIGMAPS
from pyctrl.sharding import HashRing, Sharder, ShardReconciler, plan
from pyctrl.testing import FakeClient, FakeClock
from tests.unit.sharding.helpers import NS, configmap, lease, options

SHARD = "shard.sharding.pyctrl.io/mirror"
DRAIN = "drain.sharding.pyctrl.io/mirror"


def _labels(client: FakeClient) -> dict[str, dict[str, str]]:
    return {o["metadata"]["name"]: dict(o["metadata"].get("labels") or {})
            for o in client.list_objects(CONFIGMAPS, NS)}


def _owners(client: FakeClient) -> dict[str, str | None]:
    return {n: labels.get(SHARD) for n, labels in _labels(client).items()}


class _Source:
    """The label-filtered cache of one shard, read straight from the FakeClient."""

    def __init__(self, client: FakeClient, shard: str) -> None:
        self._client = client
        self._shard = shard

    def get(self, namespace: str | None, name: str) -> dict[str, Any]:
        obj = self._client.get_object(CONFIGMAPS, name, namespace)
        if (obj["metadata"].get("labels") or {}).get(SHARD) != self._shard:
            raise NotFound("not in this shard's cache", 404, "NotFound")
        return obj


class _Inner:
    def __init__(self) -> None:
        self.keys: list[str] = []

    def reconcile(self, key: str) -> Result | None:
        self.keys.append(key)
        return None


@pytest.fixture
def world() -> tuple[FakeClient, FakeClock, Sharder]:
    clock = FakeClock()
    client = FakeClient(clock)
    for i in range(200):
        client.add_object(CONFIGMAPS, configmap(f"cm-{i}"))
    sharder = Sharder(client, options("leader"), clock=clock)
    clock.step(15)  # past the warm-up (see test_no_drain_during_the_warm_up)
    return client, clock, sharder


def _pass(client: FakeClient, sharder: Sharder) -> list[str]:
    return [a.kind for a in sharder.sync(client.list_objects(CONFIGMAPS, NS))]


def test_nothing_is_assigned_without_a_live_shard(world: tuple[FakeClient, FakeClock,
                                                              Sharder]) -> None:
    client, _, sharder = world
    assert _pass(client, sharder) == []
    assert set(_owners(client).values()) == {None}


def test_objects_are_labelled_with_their_ring_shard(world: tuple[FakeClient, FakeClock,
                                                                Sharder]) -> None:
    client, _, sharder = world
    for s in ("a", "b", "c"):
        sharder.membership.observe(lease(s))
    assert Counter(_pass(client, sharder)) == {"assign": 200}
    ring = HashRing(["a", "b", "c"])
    assert _owners(client) == {n: ring.shard_for(f"{NS}/{n}") for n in _owners(client)}
    assert _pass(client, sharder) == [], "a second pass changes nothing"


def test_an_expired_shards_objects_move_at_once_without_drain(
        world: tuple[FakeClient, FakeClock, Sharder]) -> None:
    client, clock, sharder = world
    for s in ("a", "b", "c"):
        sharder.membership.observe(lease(s))
    _pass(client, sharder)
    before = _owners(client)
    clock.step(10)
    for s in ("a", "b"):
        sharder.membership.observe(lease(s, renew="t1"))
    clock.step(5)  # c not renewed for its lease duration
    kinds = _pass(client, sharder)
    moved = {n for n, s in before.items() if s == "c"}
    assert Counter(kinds) == {"assign": len(moved)}
    after = _owners(client)
    assert {n for n in after if after[n] != before[n]} == moved
    assert "c" not in after.values()
    assert not any(DRAIN in labels for labels in _labels(client).values())


def test_a_planned_move_drains_first_and_reassigns_only_after_the_old_shard_acks(
        world: tuple[FakeClient, FakeClock, Sharder]) -> None:
    client, _, sharder = world
    for s in ("a", "b", "c"):
        sharder.membership.observe(lease(s))
    _pass(client, sharder)
    before = _owners(client)
    sharder.membership.observe(lease("d"))  # a fourth shard joins
    kinds = _pass(client, sharder)
    ring4 = HashRing(["a", "b", "c", "d"])
    moving = {n for n in before if ring4.shard_for(f"{NS}/{n}") == "d"}
    assert 20 < len(moving) < 80  # ~1/4 of 200
    assert Counter(kinds) == {"drain": len(moving)}
    labels = _labels(client)
    assert {n for n in labels if labels[n].get(DRAIN) == "true"} == moving
    assert _owners(client) == before, "still owned by the old shards while draining"
    assert _pass(client, sharder) == [], "waits for the acknowledgement"

    # The old shards reconcile the drained keys: each acknowledges instead of reconciling.
    inner = {s: _Inner() for s in "abc"}
    shards = {s: ShardReconciler(inner[s], _Source(client, s), client, options(s))
              for s in "abc"}
    for name in sorted(moving):
        old = before[name]
        assert old is not None
        assert shards[old].reconcile(f"{NS}/{name}") is None
    assert not any(inner[s].keys for s in "abc"), "a draining object is not reconciled"
    after_ack = _owners(client)
    assert {n for n in after_ack if after_ack[n] is None} == moving
    assert not any(DRAIN in labels for labels in _labels(client).values())

    assert Counter(_pass(client, sharder)) == {"assign": len(moving)}
    assert {n: s for n, s in _owners(client).items() if n in moving} == dict.fromkeys(
        moving, "d")


def test_without_the_ack_a_live_shard_keeps_its_object(
        world: tuple[FakeClient, FakeClock, Sharder]) -> None:
    """Ring changes alone never hand a live shard's object to another shard."""
    client, _, sharder = world
    sharder.membership.observe(lease("a"))
    _pass(client, sharder)
    sharder.membership.observe(lease("b"))
    for _ in range(3):
        _pass(client, sharder)
    assert set(_owners(client).values()) == {"a"}


def test_a_stale_view_of_the_object_never_overwrites_a_newer_label(
        world: tuple[FakeClient, FakeClock, Sharder]) -> None:
    client, _, sharder = world
    sharder.membership.observe(lease("a"))
    stale = client.list_objects(CONFIGMAPS, NS)
    _pass(client, sharder)  # assigns all to a (new resourceVersions)
    sharder.membership.observe(lease("b"))
    sharder.membership.observe(lease("a", holder=""))  # a released
    assert sharder.sync(stale) == [], "every write is refused by the RV precondition"
    assert set(_owners(client).values()) == {"a"}


def test_plan_on_an_empty_ring_is_empty() -> None:
    objs = [configmap("x", {SHARD: "gone"})]
    assert plan(objs, HashRing([]), frozenset(), options()) == []


def test_shard_reconciler_runs_owned_objects_and_skips_others() -> None:
    client = FakeClient()
    client.add_object(CONFIGMAPS, configmap("mine", {SHARD: "s1"}))
    client.add_object(CONFIGMAPS, configmap("theirs", {SHARD: "s2"}))
    seen: list[tuple[str, float, float]] = []
    inner = _Inner()
    r = ShardReconciler(inner, _Source(client, "s1"), client,
                        options("s1", on_reconcile=lambda k, a, b: seen.append((k, a, b))))
    r.reconcile(f"{NS}/mine")
    r.reconcile(f"{NS}/theirs")  # not in s1's cache: the inner reconciler forgets it
    r.reconcile(f"{NS}/gone")
    assert inner.keys == [f"{NS}/mine", f"{NS}/theirs", f"{NS}/gone"]
    assert [k for k, _, _ in seen] == [f"{NS}/mine"], "only owned objects are audited"


def test_ack_with_a_stale_cache_raises_conflict_and_keeps_the_new_owner() -> None:
    client = FakeClient()
    client.add_object(CONFIGMAPS, configmap("cm", {SHARD: "s1", DRAIN: "true"}))
    cached = client.get_object(CONFIGMAPS, "cm", NS)
    client.patch(CONFIGMAPS, "cm", {"metadata": {"labels": {SHARD: "s2", DRAIN: None}}}, NS)

    class Stale:
        def get(self, namespace: str | None, name: str) -> dict[str, Any]:
            return cached

    r = ShardReconciler(_Inner(), Stale(), client, options("s1"))
    with pytest.raises(Conflict):
        r.reconcile(f"{NS}/cm")
    assert _owners(client) == {"cm": "s2"}


def test_no_drain_during_the_warm_up_but_assignments_go_ahead() -> None:
    """A new sharder sees every Lease for the first time: a long-dead shard whose Lease still
    names it looks alive for a lease duration, so no planned move is made before then."""
    clock = FakeClock()
    client = FakeClient(clock)
    ring = HashRing(["a", "stale"])
    owned = next(f"owned-{i}" for i in range(100) if ring.shard_for(f"{NS}/owned-{i}") == "stale")
    client.add_object(CONFIGMAPS, configmap(owned, {SHARD: "a"}))  # would move to "stale"
    for i in range(40):
        client.add_object(CONFIGMAPS, configmap(f"new-{i}"))
    sharder = Sharder(client, options("leader"), clock=clock)
    sharder.membership.observe(lease("a"))
    sharder.membership.observe(lease("stale"))  # crashed long ago, never released
    assert Counter(_pass(client, sharder)) == {"assign": 40}, "assignments go ahead"
    clock.step(14.9)
    sharder.membership.observe(lease("a", renew="t1"))
    assert _pass(client, sharder) == [], "no drain during the warm-up"
    clock.step(0.2)  # warm-up over; "stale" expired meanwhile (never renewed)
    sharder.membership.observe(lease("a", renew="t2"))
    assert "drain" not in _pass(client, sharder), "stale is dead now: its share moves"
    assert set(_owners(client).values()) == {"a"}
