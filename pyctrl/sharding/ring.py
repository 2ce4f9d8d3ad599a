"""HashRing: a consistent-hash ring with virtual nodes, mapping object keys to shards.

Contract: ``HashRing(shards, virtual_nodes)`` places ``virtual_nodes`` points per shard at
``sha1("<shard>#<i>")`` (the first 8 bytes, big endian) and ``shard_for(key)`` returns the
shard owning the first point at or after ``sha1(key)``, wrapping around; None for an empty
ring. The mapping depends only on the set of shard names (not their order, process or
Python's hash seed), so every replica computes the same assignment. Adding a shard to N
moves about 1/(N+1) of the keys, all of them to the new shard; removing one moves only the
keys it owned.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable

__all__ = ["HashRing"]


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "big")


class HashRing:
    """An immutable ring over a set of shard names (see module docstring)."""

    def __init__(self, shards: Iterable[str], virtual_nodes: int = 100) -> None:
        if virtual_nodes < 1:
            raise ValueError("virtual_nodes must be at least 1")
        self.shards = frozenset(shards)
        points = sorted((_hash(f"{shard}#{i}"), shard)
                        for shard in self.shards for i in range(virtual_nodes))
        self._hashes = [h for h, _ in points]
        self._owners = [s for _, s in points]

    def shard_for(self, key: str) -> str | None:
        """The shard owning ``key``, or None when the ring has no shards."""
        if not self._hashes:
            return None
        at = bisect.bisect_left(self._hashes, _hash(key))
        return self._owners[at % len(self._owners)]

    def __len__(self) -> int:
        return len(self.shards)
