"""Shared helpers for cache unit tests: object builders, recorders, a sleep-recording clock."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from pyctrl.cache.keys import DeletedFinalStateUnknown
from pyctrl.kube.interface import RawObject
from pyctrl.testing.fake_clock import FakeClock

WAIT = 5.0  # real-time bound for condition waits; never a timed assertion


def cm(name: str, rv: str = "1", ns: str = "default", **extra: Any) -> RawObject:
    md: dict[str, Any] = {"name": name, "namespace": ns, "resourceVersion": rv,
                          "uid": f"uid-{name}"}
    md.update(extra.pop("metadata", {}))
    obj: RawObject = {"metadata": md, "data": {"k": name}}
    obj.update(extra)
    return obj


class Recorder:
    """Records events under a Condition so tests can wait for them."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.events: list[tuple[Any, ...]] = []

    def record(self, *event: Any) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def wait_for(self, pred: Callable[[list[tuple[Any, ...]]], bool],
                 timeout: float = WAIT) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: pred(self.events), timeout)

    def wait_count(self, n: int, timeout: float = WAIT) -> bool:
        return self.wait_for(lambda ev: len(ev) >= n, timeout)

    def snapshot(self) -> list[tuple[Any, ...]]:
        with self.cond:
            return list(self.events)


class RecordingHandler(Recorder):
    """A ResourceEventHandler that records ("add", name, initial) / ("update", old_rv,
    new_rv, name) / ("delete", name, tombstone?)."""

    def on_add(self, obj: RawObject, is_in_initial_list: bool) -> None:
        self.record("add", obj["metadata"]["name"], is_in_initial_list)

    def on_update(self, old: RawObject, new: RawObject) -> None:
        self.record("update", new["metadata"]["name"], old["metadata"]["resourceVersion"],
                    new["metadata"]["resourceVersion"], old is new)

    def on_delete(self, obj: RawObject | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.record("delete", obj.key.split("/")[-1], True)
        else:
            self.record("delete", obj["metadata"]["name"], False)


class RecordingStore(Recorder):
    """A ReflectorStore that records every call (and keeps nothing else)."""

    def add(self, obj: RawObject) -> None:
        self.record("add", obj["metadata"]["name"])

    def update(self, obj: RawObject) -> None:
        self.record("update", obj["metadata"]["name"])

    def delete(self, obj: RawObject | DeletedFinalStateUnknown) -> None:
        name = obj.key if isinstance(obj, DeletedFinalStateUnknown) else obj["metadata"]["name"]
        self.record("delete", name)

    def replace(self, objs: Any, resource_version: str = "") -> None:
        self.record("replace", sorted(o["metadata"]["name"] for o in objs), resource_version)


class SleepRecordingClock(FakeClock):
    """A FakeClock that records every sleep request per thread name."""

    def __init__(self) -> None:
        super().__init__()
        self.sleeps = Recorder()

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        self.sleeps.record(threading.current_thread().name, seconds)
        return super().sleep(seconds, stop)

    def sleeps_of(self, thread_prefix: str) -> list[float]:
        return [s for name, s in self.sleeps.snapshot() if name.startswith(thread_prefix)]
