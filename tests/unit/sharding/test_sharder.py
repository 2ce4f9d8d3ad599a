"""Sharder: assignment by ring, immediate moves off dead shards, drain handshake on live ones.

The sharder's pass (:meth:`Sharder.sync`) and the shards' :class:`ShardReconciler` run here
against one FakeClient, with shard liveness driven by a FakeClock.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pyctrl.errors import Conflict, NotFound, ServerError
from pyctrl.kube import CONFIGMAPS, JOBS, LEASES
from pyctrl.reconcile import Request, Result
from pyctrl.sharding import HashRing, Sharder, ShardingOptions, ShardReconciler, plan
from pyctrl.sharding.sharder import FAILED_RETRY, FAILED_RETRY_MAX
from pyctrl.testing import FakeClient, FakeClock
from pyctrl.testing.fake_actions import Action
from tests.threads import Runner
from tests.unit.sharding.helpers import DRAIN, NS, SHARD, configmap, lease, options, two_shards
from tests.waiting import poll


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

    def reconcile(self, request: Request) -> Result | None:
        self.keys.append(str(request))
        return None


def _sharder_over(n: int, opts: ShardingOptions) -> tuple[FakeClient, FakeClock, Sharder]:
    """A Sharder with ``opts`` over ConfigMaps cm-0 .. cm-<n-1> in a FakeClient."""
    clock = FakeClock()
    client = FakeClient(clock)
    for i in range(n):
        client.add_object(CONFIGMAPS, configmap(f"cm-{i}"))
    return client, clock, Sharder(client, opts, clock=clock)


@pytest.fixture
def world() -> tuple[FakeClient, FakeClock, Sharder]:
    client, clock, sharder = _sharder_over(200, options("leader"))
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
        assert shards[old].reconcile(Request(NS, name)) is None
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
    r.reconcile(Request(NS, "mine"))
    r.reconcile(Request(NS, "theirs"))  # not in s1's cache: the inner reconciler forgets it
    r.reconcile(Request(NS, "gone"))
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
        r.reconcile(Request(NS, "cm"))
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


# -- failover: the moves off an expired shard -----------------------------------------------


def test_an_expiring_shards_draining_objects_move_without_waiting_for_its_ack(
        world: tuple[FakeClient, FakeClock, Sharder]) -> None:
    """A shard that dies while asked to drain can never acknowledge: its objects are assigned
    (and the drain label dropped) as soon as its Lease expires; live shards still drain."""
    client, clock, sharder = world
    for s in ("a", "b", "c"):
        sharder.membership.observe(lease(s))
    _pass(client, sharder)
    before = _owners(client)
    sharder.membership.observe(lease("d"))  # a fourth shard joins: ~1/4 asked to drain
    _pass(client, sharder)
    draining = {n for n, labels in _labels(client).items() if labels.get(DRAIN) == "true"}
    assert {before[n] for n in draining} == {"a", "b", "c"}
    clock.step(10)
    for s in ("a", "b", "d"):
        sharder.membership.observe(lease(s, renew="t1"))
    clock.step(5)  # c dies before acknowledging anything
    dead = {n for n, s in before.items() if s == "c"}
    kinds = _pass(client, sharder)
    assert Counter(kinds) == {"assign": len(dead)}, "no ack awaited from a dead shard"
    ring = HashRing(["a", "b", "d"])
    labels = _labels(client)
    assert {n: labels[n].get(SHARD) for n in dead} == {
        n: ring.shard_for(f"{NS}/{n}") for n in dead}
    assert not any(DRAIN in labels[n] for n in dead), "the drain label goes with the move"
    assert {n for n in labels if labels[n].get(DRAIN)} == draining - dead, (
        "the live shards' objects still wait for their acknowledgement")


def test_assignments_are_written_before_planned_drains(
        world: tuple[FakeClient, FakeClock, Sharder]) -> None:
    client, _, _ = world
    clock = FakeClock()
    sharder = Sharder(client, options("leader", writers=1), clock=clock)
    clock.step(15)
    sharder.membership.observe(lease("a"))
    _pass(client, sharder)
    for i in range(20):
        client.add_object(CONFIGMAPS, configmap(f"new-{i}"))
    sharder.membership.observe(lease("b"))
    client.clear_actions()
    kinds = _pass(client, sharder)
    assert Counter(kinds)["assign"] == 20 and Counter(kinds)["drain"] > 20
    written = ["drain" if DRAIN in a.object["metadata"]["labels"] else "assign"
               for a in client.actions if a.verb == "patch"]
    assert written == sorted(written, key=lambda k: k != "assign"), "assignments first"


def test_label_writes_go_out_in_parallel_but_at_most_writers_at_once() -> None:
    client, _, sharder = _sharder_over(40, options("leader", writers=4))
    sharder.membership.observe(lease("a"))
    lock = threading.Lock()
    gate = threading.Event()
    in_flight, peak = [0], [0]

    def slow_patch(action: Any) -> None:
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        gate.wait(10)
        with lock:
            in_flight[0] -= 1
        # then the FakeClient applies the patch

    client.prepend_reactor("patch", CONFIGMAPS, slow_patch)
    moved: list[int] = []
    writer = threading.Thread(target=lambda: moved.append(len(_pass(client, sharder))),
                              name="test-pass")
    writer.start()
    try:
        assert poll(lambda: in_flight[0] == 4, timeout=5), in_flight
    finally:
        gate.set()
        writer.join(10)
    assert moved == [40] and peak[0] == 4


def test_writers_must_be_positive() -> None:
    with pytest.raises(ValueError, match="writers"):
        options(writers=0)


# -- the run loop wakes up at an expiry ---------------------------------------------------------


class _ProbeClock(FakeClock):
    """A FakeClock that tells where the sharder's own thread is parked ("sleep": its
    min_interval pause, "wait": waiting for news or a due time) and whether the clock's time
    has been seen by that park (:meth:`settled`), so a test steps time only once the sharder
    is parked (the informers' threads wait on the clock too) and reads the outcome only once
    the sharder has reacted to the step.

    A park is published once registered with the clock, so a step never misses waking it.
    The sharder decided to park at its last reading of the time: a wait lasts until the next
    step (FakeClock wakes every wait at a step), a sleep until its deadline."""

    def __init__(self) -> None:
        super().__init__()
        self._probe = threading.Lock()
        self.parked: str | None = None
        self._until = 0.0  # "wait": the time it decided at; "sleep": the time it ends
        # only the sharder thread writes these two:
        self._seen = 0.0  # its last reading of the monotonic time
        self._sleeping: float | None = None  # the seconds of the sleep it is entering

    @staticmethod
    def _sharder() -> bool:
        return threading.current_thread().name == "sharder"

    def monotonic(self) -> float:
        now = super().monotonic()
        if self._sharder():
            self._seen = now
        return now

    def _register(self, cond: threading.Condition) -> int:
        wid = super()._register(cond)
        if self._sharder():  # the wait's timeout, the sleep's deadline: from the last reading
            with self._probe:
                self.parked = "wait" if self._sleeping is None else "sleep"
                self._until = self._seen + max(0.0, self._sleeping or 0.0)
        return wid

    def _unpark(self) -> None:
        if self._sharder():
            self._sleeping = None
            with self._probe:
                self.parked = None

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        try:
            super().wait(cond, timeout)
        finally:
            self._unpark()

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        if self._sharder():
            self._sleeping = seconds
        try:
            return super().sleep(seconds, stop)
        finally:
            self._unpark()

    def settled(self) -> bool:
        """Whether the sharder is parked where the current time leaves it: a wait decided at
        this time (a step wakes every wait: it is settled again once the sharder has looked
        at the new time, after a pass if the step made one due), or a sleep ending later."""
        now = self.monotonic()
        with self._probe:
            if self.parked == "wait":
                return self._until >= now
            return self.parked == "sleep" and self._until > now


@contextmanager
def _running(sharder: Sharder, clock: _ProbeClock) -> Iterator[None]:
    """Run the sharder on its own thread; the body starts once its first pass has settled."""
    runner = Runner(sharder.run, name="sharder").start()
    try:
        assert poll(lambda: sharder.passes >= 1 and clock.settled(), timeout=5,
                    interval=0.01)
        yield
    finally:
        runner.stop.set()
        sharder.wake()  # a FakeClock wait does not end with stop: a failed test would hang
        runner.shutdown()


def _step(clock: _ProbeClock, seconds: float) -> None:
    """Step ``seconds`` once the sharder is parked, and return once it has settled at the new
    time (after any pass the step made due): its state is then the step's outcome."""
    assert poll(clock.settled, timeout=5, interval=0.01), "the sharder is not parked"
    clock.step(seconds)
    assert poll(clock.settled, timeout=5, interval=0.01), f"not settled at {clock.monotonic()}"


def _park_at(clock: _ProbeClock, at: float) -> None:
    """Step the clock to ``at``; the sharder must then be waiting for news (no pass due)."""
    _step(clock, at - clock.monotonic())
    assert clock.parked == "wait", clock.parked


def _step_until_idle(clock: _ProbeClock, step: float) -> None:
    """Step until the sharder waits for news with nothing pending (the informers' initial
    events may still wake it for a pass or two after its first one)."""
    for _ in range(20):
        assert poll(clock.settled, timeout=5, interval=0.01), "the sharder is not parked"
        if clock.parked == "wait":
            return
        _step(clock, step)
    raise AssertionError("the sharder never went idle")


def _b_renews_through_the_warm_up(client: FakeClient, clock: _ProbeClock, sharder: Sharder,
                                  step: float) -> None:
    """From idle (see two_shards): b renews at 1010, so it expires at 1025 (a renewal wakes no
    pass); the warm-up's end (1015) runs one pass, at 1015.2; then idle again."""
    _park_at(clock, 1010)
    passes = sharder.passes
    client.update(LEASES, lease("b", renew="t1"))
    assert poll(lambda: sharder.membership.view()[1] == pytest.approx(1025), timeout=5)
    _step(clock, 5.2)
    assert sharder.passes == passes + 1 and clock.parked == "sleep"
    _step_until_idle(clock, step)


@contextmanager
def _past_the_warm_up(min_interval: float
                      ) -> Iterator[tuple[_ProbeClock, FakeClient, dict[str, str], Sharder]]:
    """A running sharder over :func:`two_shards`, idle past the warm-up with b renewed at
    1010 (see :func:`_b_renews_through_the_warm_up`); yields the clock, client, owners and
    sharder."""
    clock = _ProbeClock()
    client, owners = two_shards(clock)
    sharder = Sharder(client, options("leader"), clock=clock, min_interval=min_interval)
    with _running(sharder, clock):
        _step_until_idle(clock, min_interval)
        _b_renews_through_the_warm_up(client, clock, sharder, min_interval)
        yield clock, client, owners, sharder


def test_a_shard_expiring_during_the_pause_after_a_pass_gets_a_pass_right_after_it() -> None:
    """Past the warm-up (b renewed at 1010, so it expires at 1025), a pass at 1024.5 (a's
    Lease changed) is followed by a 1 s pause, in which b expires. With nothing else
    happening, the pass that moves b's objects runs as the pause ends; it does not wait for
    a's expiry or a resync (b is no longer among the alive shards by then, so only the
    expiry read together with the pass's alive set can schedule it)."""
    with _past_the_warm_up(1.0) as (clock, client, owners, sharder):
        _park_at(clock, 1024.5)
        passes = sharder.passes
        # news: a pass at 1024.5 (a longer duration; a mere renewal wakes no pass)
        client.update(LEASES, lease("a", renew="t1", duration=61))
        assert poll(lambda: sharder.passes == passes + 1 and clock.settled(), timeout=5,
                    interval=0.01)
        assert clock.parked == "sleep" and "b" in _owners(client).values()
        _step(clock, 1.0)  # the pause ends at 1025.5; b expired at 1025
        assert set(_owners(client).values()) == {"a"}, Counter(_owners(client).values())
        assert sharder.passes == passes + 2 and clock.monotonic() == pytest.approx(1025.5)
    assert len([a for a in client.actions if a.verb == "patch"]) == sum(
        s == "b" for s in owners.values())


def test_a_shard_expiring_without_news_gets_a_pass_at_that_instant() -> None:
    """Past the warm-up (b renewed at 1010, so it expires at 1025, not as the warm-up ends)."""
    with _past_the_warm_up(0.5) as (clock, client, _, sharder):
        passes = sharder.passes
        _park_at(clock, 1024.99)  # b still alive
        assert sharder.passes == passes and "b" in _owners(client).values()
        _step(clock, 1025 - clock.monotonic())  # b's Lease expires
        assert "b" not in _owners(client).values()
        assert sharder.passes == passes + 1


def test_the_leader_weights_its_own_shard_with_leader_weight() -> None:
    client, clock, sharder = _sharder_over(600, options("a", leader_weight=0.5))
    clock.step(15)
    for s in ("a", "b", "c"):
        sharder.membership.observe(lease(s))
    _pass(client, sharder)
    ring = HashRing(["a", "b", "c"], weights={"a": 0.5})
    owners = _owners(client)
    assert owners == {n: ring.shard_for(f"{NS}/{n}") for n in owners}
    counts = Counter(owners.values())
    assert counts["a"] < min(counts["b"], counts["c"]), counts


def test_leader_weight_must_be_in_zero_one() -> None:
    for weight in (0.0, 1.2):
        with pytest.raises(ValueError, match="leader_weight"):
            options("a", leader_weight=weight)


def test_renewals_of_live_shards_wake_no_pass_not_even_at_their_old_expiry() -> None:
    """Leases a (60 s) and b (15 s) seen at 1000. b renews at 1010 and 1020: neither renewal
    runs a pass, nor does b's first expiry instant (1015: only the warm-up's end does) or its
    second (1025); when b stops renewing it expires at 1035 and its objects move then."""
    with _past_the_warm_up(0.5) as (clock, client, owners, sharder):
        passes = sharder.passes
        _park_at(clock, 1020)
        client.update(LEASES, lease("b", renew="t2"))
        assert poll(lambda: sharder.membership.view()[1] == pytest.approx(1035), timeout=5)
        _park_at(clock, 1025.5)  # past the expiry the last pass saw
        assert sharder.passes == passes
        assert _owners(client) == owners
        _step(clock, 1035 - clock.monotonic())  # b's Lease expires without news
        assert "b" not in _owners(client).values()
        assert sharder.passes == passes + 1


def test_at_an_expiry_instant_only_a_real_expiry_asks_for_a_pass() -> None:
    """The decision the run loop takes at an expiry instant, step by step: every shard the
    last pass planned with renewed since -> no pass, the next expiry instead; a shard
    expired, the warm-up not over, or the resync due -> a pass (None)."""
    client, clock, sharder = _sharder_over(10, options("leader"))
    sharder.membership.observe(lease("a", duration=60))
    sharder.membership.observe(lease("b", duration=20))  # expires at 1020 without news
    assert sharder._renewed_due(resync_due=clock.monotonic() + 30) is None, "in the warm-up"
    clock.step(15)
    sharder.sync(client.list_objects(CONFIGMAPS, NS))  # 1015: warm, plans with {a, b}
    clock.step(3)
    sharder.membership.observe(lease("b", renew="t1", duration=20))  # 1018: b until 1038
    clock.step(3)  # 1021: past the expiry the pass saw
    now = clock.monotonic()
    assert sharder._renewed_due(resync_due=now + 30) == pytest.approx(now + 17)
    assert sharder._renewed_due(resync_due=now) is None, "the resync is due"
    clock.step(18)  # 1039: b's renewal expired too
    assert sharder._renewed_due(resync_due=clock.monotonic() + 30) is None


def test_a_drain_refused_by_a_status_write_is_retried_once_the_watch_has_the_new_version(
        ) -> None:
    """Shards a and b, a third (c) joins: the pass drains what moves to c, but the drain
    write is refused (Conflict: a status-like write changed the object first - as at a tick,
    where every CronJob's status is written). That write wakes no pass by itself; the sharder
    asks its watch for the object's next version and drains it in the pass right after, not
    at the resync 30 s later (what it did: a move at a tick then took 30 s, and CI's
    handover test timed out when a second write of the same move was refused as well)."""
    clock = _ProbeClock()
    client = FakeClient(clock)
    # 20 objects that stay where they are and one that moves to c: no other drain's event
    # can wake a pass that happens to see the refused object's new version.
    two, three = HashRing(["a", "b"]), HashRing(["a", "b", "c"])
    names = [f"cm-{i}" for i in range(60)]
    stay = [n for n in names if three.shard_for(f"{NS}/{n}") != "c"][:20]
    move = next(n for n in names if three.shard_for(f"{NS}/{n}") == "c")
    for name in [*stay, move]:
        client.add_object(CONFIGMAPS, configmap(name, {SHARD: two.shard_for(f"{NS}/{name}")
                                                       or ""}))
    for s in ("a", "b"):
        client.add_object(LEASES, lease(s, duration=600))
    refused: list[str] = []

    def status_write_first(action: Action) -> None:
        if not refused and DRAIN in str(action.object):
            refused.append(str(action.name))
            obj = client.get_object(CONFIGMAPS, str(action.name), NS)
            client.update(CONFIGMAPS, {**obj, "data": {"k": "status"}})

    client.prepend_reactor("patch", CONFIGMAPS, status_write_first)
    sharder = Sharder(client, options("leader"), clock=clock, min_interval=0.5)
    wanted = {move}

    def draining() -> set[str]:
        return {n for n, labels in _labels(client).items() if labels.get(DRAIN)}

    with _running(sharder, clock):
        _step_until_idle(clock, 0.5)
        _step(clock, 15)  # past the warm-up: drains may be asked
        _step_until_idle(clock, 0.5)
        assert not draining() and set(_owners(client).values()) == {"a", "b"}
        start = clock.monotonic()
        client.add_object(LEASES, lease("c", duration=600))
        assert poll(lambda: bool(refused) and clock.settled(), timeout=5,
                    interval=0.01)
        while draining() != wanted and clock.monotonic() - start < 5:
            _step(clock, 0.5)  # the retry is woken by the watch: it may come between steps
        assert draining() == wanted, (refused, wanted - draining())
        assert clock.monotonic() - start < 5, "the refused drain waited for the resync"


def test_a_pass_with_failed_writes_is_retried_after_a_doubling_backoff() -> None:
    """An outage: every write fails (500). The next pass is due FAILED_RETRY after, then
    twice that, up to FAILED_RETRY_MAX - not one pass per min_interval - and a pass without
    failures clears the backoff."""
    client, clock, sharder = _sharder_over(20, options("leader"))
    clock.step(15)
    sharder.membership.observe(lease("a", duration=600))
    down = [True]

    def outage(action: Action) -> None:
        if down[0]:
            raise ServerError("etcdserver: request timed out", 500, "InternalError")

    client.prepend_reactor("patch", CONFIGMAPS, outage)
    waits = []
    for _ in range(6):
        assert _pass(client, sharder) == []
        waits.append(sharder._next_due() - clock.monotonic())
    assert waits == pytest.approx([min(FAILED_RETRY * 2 ** k, FAILED_RETRY_MAX)
                                   for k in range(6)])
    down[0] = False
    assert _pass(client, sharder) == ["assign"] * 20
    assert sharder._next_due() - clock.monotonic() > FAILED_RETRY_MAX, "backoff cleared"


def test_a_pass_that_cannot_list_owned_objects_is_retried_after_the_backoff() -> None:
    """A dead shard's owners need the LIST of its owned objects to move; when that LIST fails
    they wait, and the next pass is due FAILED_RETRY later, not at once."""
    client, clock, sharder = _sharder_over(5, options("leader", owned=(JOBS,)))
    for i in range(5):
        obj = client.get_object(CONFIGMAPS, f"cm-{i}", NS)
        obj["metadata"]["labels"] = {SHARD: "gone"}
        client.update(CONFIGMAPS, obj)
    clock.step(15)
    sharder.membership.observe(lease("a", duration=600))

    def outage(action: Action) -> None:
        raise ServerError("etcdserver: request timed out", 500, "InternalError")

    client.prepend_reactor("list", JOBS, outage)
    assert _pass(client, sharder) == [], "the dead shard's owners wait for their list"
    assert sharder._next_due() - clock.monotonic() == pytest.approx(FAILED_RETRY)
