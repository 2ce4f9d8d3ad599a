"""HashRing: a consistent-hash ring with virtual nodes, mapping object keys to shards.

Contract: ``HashRing(shards, virtual_nodes)`` places ``virtual_nodes`` points per shard at
``sha1("<shard>#<i>")`` (the first 8 bytes, big endian) and ``shard_for(key)`` returns the
shard owning the first point at or after ``sha1(key)``, wrapping around; None for an empty
ring. The mapping depends only on the set of shard names (not their order, process or
Python's hash seed), so every replica computes the same assignment. Adding a shard to N
moves about 1/(N+1) of the keys, all of them to the new shard; removing one moves only the
keys it owned.

Spread: a shard's share is the sum of its points' arcs, so its deviation from 1/N shrinks as
1/sqrt(virtual_nodes). Measured on 6000 keys over 40 random sets of pod-like shard names
(max/min share): 100 points per shard 1.45 at worst for 3 shards (one bench run: 1799-2193 of
6000); 1000 points 1.07 median, 1.18 worst for 3, 4 and 5 shards (the keys' own sampling
noise alone is ~1.04 median at 6000 keys). ``shard_for`` memoizes per ring (a ring is
immutable), so a sharder that keeps its ring while membership is unchanged hashes each key
once, not once per pass.

Weights: ``weights`` maps a shard to a factor in (0, 1] of ``virtual_nodes`` (default 1), so
that shard gets about that fraction of an equal share. The sharding leader can give itself a
smaller one (``ShardingOptions.leader_weight``), since it also runs the sharder; measured at
6000 CronJobs on 3 replicas the sharder costs the leader too little for that to pay (see
bench/README.md, issue 28), so the default is 1. The mapping then depends on the shard
names and their weights, which only the sharder (the leader) needs: the other replicas
follow its labels.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable, Mapping

__all__ = ["HashRing"]


_MEMO_MAX = 1 << 20


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "big")


class HashRing:
    """An immutable ring over a set of shard names (see module docstring)."""

    def __init__(self, shards: Iterable[str], virtual_nodes: int = 1000,
                 weights: Mapping[str, float] | None = None) -> None:
        if virtual_nodes < 1:
            raise ValueError("virtual_nodes must be at least 1")
        weights = dict(weights or {})
        for shard, weight in weights.items():
            if not 0 < weight <= 1:
                raise ValueError(f"weight of {shard!r} must be in (0, 1], not {weight!r}")
        self.shards = frozenset(shards)
        self.weights = {s: w for s, w in weights.items() if s in self.shards and w != 1}
        counts = {shard: max(1, round(virtual_nodes * self.weights.get(shard, 1.0)))
                  for shard in self.shards}
        points = sorted((_hash(f"{shard}#{i}"), shard)
                        for shard in self.shards for i in range(counts[shard]))
        self._hashes = [h for h, _ in points]
        self._owners = [s for _, s in points]
        self._memo: dict[str, str] = {}

    def shard_for(self, key: str) -> str | None:
        """The shard owning ``key``, or None when the ring has no shards."""
        if not self._hashes:
            return None
        shard = self._memo.get(key)
        if shard is None:
            if len(self._memo) >= _MEMO_MAX:  # keys come and go: bound what a long-lived ring keeps
                self._memo.clear()
            at = bisect.bisect_left(self._hashes, _hash(key))
            shard = self._memo[key] = self._owners[at % len(self._owners)]
        return shard

    def __len__(self) -> int:
        return len(self.shards)
