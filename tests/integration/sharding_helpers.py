"""What the sharding integration tests share: a label-history watch and the overlap audit."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from cronjob_controller.api import CRONJOBS
from pyctrl import RealClock, RESTClient

SHARD_LABEL = "shard.sharding.pyctrl.io/cronjob"
DRAIN_LABEL = "drain.sharding.pyctrl.io/cronjob"
WALL = RealClock()


def overlapping(records: list[tuple[str, str, float, float]]) -> list[tuple[str, str, str]]:
    """(key, shard, other shard) for every key two shards reconciled at overlapping times;
    ``records`` are (shard, key, start, end) on one monotonic clock."""
    by_key: dict[str, list[tuple[float, float, str]]] = {}
    for shard, key, start, end in records:
        by_key.setdefault(key, []).append((start, end, shard))
    bad = []
    for key, spans in by_key.items():
        spans.sort()
        for i, (_s1, e1, a) in enumerate(spans):
            for s2, _e2, b in spans[i + 1:]:
                if s2 >= e1:
                    break
                if a != b:
                    bad.append((key, a, b))
    return bad


@dataclass
class Audit:
    """Every owned-object reconcile of every shard: (shard, key, start, end)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    records: list[tuple[str, str, float, float]] = field(default_factory=list)

    def hook(self, shard: str) -> Any:
        def record(key: str, start: float, end: float) -> None:
            with self.lock:
                self.records.append((shard, key, start, end))
        return record

    def overlaps(self) -> list[tuple[str, str, str]]:
        with self.lock:
            return overlapping(list(self.records))


class LabelHistory:
    """Watches the CronJobs and keeps, per name, the distinct (shard, drain) label states and
    the wall time each was received. A watch the server ends (a slow watcher is closed under
    load, a timeout) is resumed from the last resourceVersion seen, so no change is missed;
    ``errors`` lists what ended each stream, and a 410 (history compacted) fails :meth:`stop`
    as the history would then have a gap."""

    def __init__(self, client: RESTClient, namespace: str) -> None:
        self._client = client
        self._namespace = namespace
        self._rv = client.list(CRONJOBS, namespace, limit=1)["metadata"]["resourceVersion"]
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._stream: Any = None
        self.errors: list[str] = []
        self.gap = False
        self.states: dict[str, list[tuple[str | None, str | None]]] = {}
        self.times: dict[str, list[float]] = {}  # parallel to states
        self._thread = threading.Thread(target=self._run, name="label-history", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.is_set() and not self.gap:
            try:
                stream = self._client.watch(CRONJOBS, self._namespace,
                                            resource_version=self._rv, timeout_seconds=300)
                with self._lock:
                    self._stream = stream
                if self._stopped.is_set():
                    stream.close()
                    return
                for event in stream:
                    self._record(event)
                self.errors.append("stream ended")
            except Exception as err:  # closed by stop(), or the server ended it
                if self._stopped.is_set():
                    return
                self.errors.append(repr(err))

    def _record(self, event: dict[str, Any]) -> None:
        at = WALL.time()
        obj = event.get("object") or {}
        if event.get("type") == "ERROR":
            self.gap = self.gap or obj.get("code") == 410
            return
        meta = obj.get("metadata") or {}
        self._rv = str(meta.get("resourceVersion") or self._rv)
        if event.get("type") == "BOOKMARK":
            return
        labels = meta.get("labels") or {}
        state = (labels.get(SHARD_LABEL), labels.get(DRAIN_LABEL))
        name = str(meta.get("name"))
        seen = self.states.setdefault(name, [])
        if not seen or seen[-1] != state:
            self.times.setdefault(name, []).append(at)
            seen.append(state)

    def left(self, name: str, shard: str) -> float | None:
        """When ``name`` was first seen labelled for another shard than ``shard``."""
        states, times = self.states.get(name, []), self.times.get(name, [])
        return next((t for (s, _), t in zip(states, times, strict=False)
                     if s is not None and s != shard), None)

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            if self._stream is not None:
                self._stream.close()
        self._thread.join(10)
        assert not self.gap, f"the label watch lost history (410): {self.errors}"


