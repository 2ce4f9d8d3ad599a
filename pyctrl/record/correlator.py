"""EventCorrelator: aggregation, de-duplication and spam filtering of core/v1 Events.

Contract (the behaviour of client-go's events correlator, re-implemented):

* Aggregation: events that share source, involved object, type and reason but differ in
  message are "similar". Within ``similar_window`` seconds (reset when that many seconds pass
  without one), once ``max_similar`` distinct messages were seen, further similar events are
  replaced by one event whose message starts with ``(combined from similar events): `` and
  which is counted under the similar-events key.
* De-duplication: an event identical to one already written (same source, object, type,
  reason and message; or the same combined key) is not created again: it reuses the stored
  Event's name with ``count`` one higher, and the correlator returns the merge patch
  (count, lastTimestamp, message) to apply to it.
* Spam filter: each involved object (with the source) has a token bucket of ``spam_burst``
  tokens refilled at ``spam_qps`` per second; an event that finds the bucket empty is skipped.
* State is bounded (LRU of ``cache_size`` keys per cache) and time comes from the Clock's
  monotonic reading. Not thread-safe: the broadcaster's single sink thread owns it.
* State is small: cache keys are 128-bit digests of the composite keys and a similar-events
  record keeps 64-bit digests of its messages, not the texts. A controller records about one
  distinct message per object and reason per minute, so these records fill for
  ``max_similar`` minutes and the de-duplication LRU fills with keys never seen again; their
  size is what a process's memory climbs by in its first minutes.
"""

from __future__ import annotations

import copy
import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from pyctrl.clock import Clock
from pyctrl.kube import meta

__all__ = ["COMBINED_PREFIX", "CorrelateResult", "EventCorrelator"]

COMBINED_PREFIX = "(combined from similar events): "

Event = dict[str, Any]


@dataclass
class CorrelateResult:
    """``event`` to write; ``patch`` set when it updates an existing Event; ``skip`` when the
    spam filter dropped it; ``key`` to pass back to :meth:`EventCorrelator.update_state`."""

    event: Event
    key: str
    patch: dict[str, Any] | None = None
    skip: bool = False


@dataclass(slots=True)
class _Similar:
    # digests of the distinct messages; a list (at most max_similar, so membership is cheap)
    # is a fraction of a set's size
    messages: list[int] = field(default_factory=list)
    last_seen: float = 0.0


@dataclass(slots=True)
class _Logged:
    count: int
    first_timestamp: str
    name: str
    resource_version: str


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


class _Lru(OrderedDict[str, Any]):
    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: str, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


def _digest(*parts: str) -> str:
    """A fixed-size (128-bit, hex) key for the joined ``parts``."""
    return hashlib.blake2b("\x00".join(parts).encode("utf-8", "surrogatepass"),
                           digest_size=16).hexdigest()


def _message_digest(message: str) -> int:
    return int.from_bytes(hashlib.blake2b(message.encode("utf-8", "surrogatepass"),
                                          digest_size=8).digest())


def _object_key(event: Event) -> str:
    src = event.get("source") or {}
    ref = event.get("involvedObject") or {}
    return _digest(*(
        str(x or "")
        for x in (
            src.get("component"), src.get("host"), ref.get("kind"), ref.get("namespace"),
            ref.get("name"), ref.get("uid"), ref.get("apiVersion"),
        )
    ))


def _similar_key(event: Event) -> str:
    return _digest(_object_key(event), str(event.get("type")), str(event.get("reason")))


class EventCorrelator:
    """Decides, for each new Event, whether to create, patch or skip it (see module doc)."""

    def __init__(
        self,
        clock: Clock,
        *,
        max_similar: int = 10,
        similar_window: float = 600.0,
        spam_burst: int = 25,
        spam_qps: float = 1.0 / 300.0,
        cache_size: int = 4096,
    ) -> None:
        self._clock = clock
        self._max_similar = max_similar
        self._similar_window = similar_window
        self._spam_burst = float(spam_burst)
        self._spam_qps = spam_qps
        self._similar: _Lru = _Lru(cache_size)
        self._logged: _Lru = _Lru(cache_size)
        self._buckets: _Lru = _Lru(cache_size)

    def correlate(self, event: Event) -> CorrelateResult:
        """Aggregate, then de-duplicate, then spam-filter ``event`` (a fresh core/v1 Event)."""
        aggregated, key = self._aggregate(event)
        observed, patch = self._observe(aggregated, key)
        if not self._allow(observed):
            return CorrelateResult(observed, key, None, skip=True)
        return CorrelateResult(observed, key, patch)

    def update_state(self, event: Event, key: str) -> None:
        """Remember what the server stored (name, resourceVersion, count) for later patches."""
        entry = _Logged(
            count=int(event.get("count") or 1),
            first_timestamp=str(event.get("firstTimestamp") or ""),
            name=meta.name(event),
            resource_version=meta.resource_version(event),
        )
        self._logged.put(key, entry)

    @staticmethod
    def _dedup_key(event: Event) -> str:
        return _digest(_similar_key(event), str(event.get("message")))

    def _aggregate(self, event: Event) -> tuple[Event, str]:
        now = self._clock.monotonic()
        skey = _similar_key(event)
        record: _Similar | None = self._similar.get(skey)
        if record is None or record.last_seen + self._similar_window < now:
            record = _Similar()
        record.last_seen = now
        digest = _message_digest(str(event.get("message")))
        if digest not in record.messages:
            record.messages.append(digest)
        self._similar.put(skey, record)
        if len(record.messages) < self._max_similar:
            return event, self._dedup_key(event)
        record.messages.pop()  # keep the record bounded, as the original does
        combined = copy.deepcopy(event)
        combined["message"] = COMBINED_PREFIX + str(event.get("message"))
        return combined, skey

    def _observe(self, event: Event, key: str) -> tuple[Event, dict[str, Any] | None]:
        seen: _Logged | None = self._logged.get(key)
        if seen is None:
            event["count"] = 1
            md = event.setdefault("metadata", {})
            self._logged.put(
                key, _Logged(1, str(event.get("firstTimestamp") or ""), str(md.get("name")), "")
            )
            return event, None
        seen.count += 1
        self._logged.move_to_end(key)
        event["count"] = seen.count
        event["firstTimestamp"] = seen.first_timestamp
        md = event.setdefault("metadata", {})
        md["name"] = seen.name
        if seen.resource_version:
            md["resourceVersion"] = seen.resource_version
        patch = {
            "count": seen.count,
            "lastTimestamp": event.get("lastTimestamp"),
            "message": event.get("message"),
        }
        return event, patch

    def _allow(self, event: Event) -> bool:
        now = self._clock.monotonic()
        okey = _object_key(event)
        bucket: _Bucket | None = self._buckets.get(okey)
        if bucket is None:
            bucket = _Bucket(self._spam_burst, now)
        else:
            elapsed = max(0.0, now - bucket.updated)
            bucket.tokens = min(self._spam_burst, bucket.tokens + elapsed * self._spam_qps)
            bucket.updated = now
        self._buckets.put(okey, bucket)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return True
        return False
