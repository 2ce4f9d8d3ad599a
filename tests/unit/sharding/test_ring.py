"""HashRing: stable, balanced, and minimal movement when shards come and go."""

from __future__ import annotations

import random

import pytest

from pyctrl.sharding import HashRing

KEYS = [f"ns-{i % 7}/cronjob-{i}" for i in range(10_000)]


def _assign(ring: HashRing) -> dict[str, str | None]:
    return {k: ring.shard_for(k) for k in KEYS}


def test_empty_ring_assigns_nothing() -> None:
    assert HashRing([]).shard_for("a/b") is None


def test_assignment_depends_only_on_the_set_of_shards() -> None:
    a = HashRing(["s1", "s2", "s3"])
    b = HashRing(["s3", "s1", "s2", "s1"])
    assert _assign(a) == _assign(b)


def test_keys_spread_roughly_evenly_over_three_shards() -> None:
    counts: dict[str | None, int] = {}
    for shard in _assign(HashRing(["s1", "s2", "s3"])).values():
        counts[shard] = counts.get(shard, 0) + 1
    assert set(counts) == {"s1", "s2", "s3"}
    assert all(abs(c / len(KEYS) - 1 / 3) < 0.06 for c in counts.values()), counts


@pytest.mark.parametrize("seed", range(5))
def test_adding_a_fourth_shard_moves_about_a_quarter_all_to_it(seed: int) -> None:
    rng = random.Random(seed)
    shards = [f"pod-{rng.randrange(10**6)}" for _ in range(4)]
    before = _assign(HashRing(shards[:3]))
    after = _assign(HashRing(shards))
    moved = [k for k in KEYS if before[k] != after[k]]
    assert all(after[k] == shards[3] for k in moved)
    assert 0.25 - 0.07 < len(moved) / len(KEYS) < 0.25 + 0.07, len(moved)


@pytest.mark.parametrize("seed", range(5))
def test_removing_a_shard_moves_only_its_keys(seed: int) -> None:
    rng = random.Random(seed)
    shards = [f"pod-{rng.randrange(10**6)}" for _ in range(4)]
    before = _assign(HashRing(shards))
    gone = shards[rng.randrange(4)]
    after = _assign(HashRing([s for s in shards if s != gone]))
    moved = {k for k in KEYS if before[k] != after[k]}
    assert moved == {k for k in KEYS if before[k] == gone}
    assert all(after[k] != gone for k in KEYS)


def test_virtual_nodes_must_be_positive() -> None:
    with pytest.raises(ValueError):
        HashRing(["a"], virtual_nodes=0)


@pytest.mark.parametrize("n", [3, 4, 5])
def test_spread_over_n_shards_is_within_ten_percent(n: int) -> None:
    """The default 1000 points per shard: max/min share <= 1.1 on 6000 keys (with 100
    points a 3-shard bench ring held 1799-2193 of 6000, 1.22)."""
    keys = [f"skew-pyctrl-sharded/cj-{i:05d}" for i in range(6000)]
    ring = HashRing([f"shard-{i}" for i in range(n)])
    counts: dict[str | None, int] = {}
    for key in keys:
        shard = ring.shard_for(key)
        counts[shard] = counts.get(shard, 0) + 1
    print(f"{n} shards: {sorted(counts.values())}")
    assert len(counts) == n
    assert max(counts.values()) / min(counts.values()) <= 1.1, counts


def test_shard_for_is_memoized_and_stable() -> None:
    ring = HashRing(["s1", "s2", "s3"])
    first = [ring.shard_for(k) for k in KEYS[:100]]
    assert [ring.shard_for(k) for k in KEYS[:100]] == first
    assert first == [HashRing(["s3", "s2", "s1"]).shard_for(k) for k in KEYS[:100]]


def test_a_weighted_shard_gets_about_its_share() -> None:
    counts: dict[str | None, int] = {}
    for shard in _assign(HashRing(["s1", "s2", "s3"], weights={"s1": 0.5})).values():
        counts[shard] = counts.get(shard, 0) + 1
    # s1 has half the points of the others: 0.5 / 2.5 of the keys
    assert abs(counts["s1"] / len(KEYS) - 0.2) < 0.04, counts
    assert all(abs(counts[s] / len(KEYS) - 0.4) < 0.05 for s in ("s2", "s3")), counts


def test_lowering_a_weight_moves_keys_only_away_from_that_shard() -> None:
    before = _assign(HashRing(["s1", "s2", "s3"]))
    after = _assign(HashRing(["s1", "s2", "s3"], weights={"s1": 0.6}))
    moved = {k for k in KEYS if before[k] != after[k]}
    assert moved, "a smaller weight hands some keys over"
    assert all(before[k] == "s1" and after[k] != "s1" for k in moved)


def test_weight_one_and_weights_of_absent_shards_change_nothing() -> None:
    plain = _assign(HashRing(["s1", "s2"]))
    assert _assign(HashRing(["s1", "s2"], weights={"s1": 1.0, "gone": 0.3})) == plain
    assert HashRing(["s1", "s2"], weights={"gone": 0.3}).weights == {}


@pytest.mark.parametrize("weight", [0.0, -0.5, 1.5, float("nan")])
def test_weights_must_be_in_zero_one(weight: float) -> None:
    with pytest.raises(ValueError, match="weight"):
        HashRing(["s1"], weights={"s1": weight})


def test_a_tiny_weight_still_leaves_the_shard_one_point() -> None:
    ring = HashRing(["s1"], virtual_nodes=10, weights={"s1": 0.01})
    assert ring.shard_for("any/key") == "s1"
