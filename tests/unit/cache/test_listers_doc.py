"""docs/LISTERS.md's reverse-lookup example, run as written: the Python block is executed as a
module, then driven over a FakeClient (a ConfigMap change enqueues exactly the Backups that
name it, through the index)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyctrl import CONFIGMAPS, Request
from pyctrl.cache import SharedInformerFactory
from pyctrl.testing import FakeClient, FakeClock
from tests.docblocks import doc_module, python_blocks
from tests.waiting import eventually

DOC = Path(__file__).resolve().parents[3] / "docs" / "LISTERS.md"


@pytest.fixture
def example() -> Iterator[Any]:
    [code] = python_blocks(DOC.read_text(encoding="utf-8"))
    with doc_module(code, DOC, "listers_doc_example") as module:
        yield module


class _Queue:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.added: list[Request] = []

    def add(self, item: Request) -> None:
        with self.lock:
            self.added.append(item)

    def take(self) -> set[str]:
        with self.lock:
            out, self.added = {str(r) for r in self.added}, []
        return out


def test_a_configmap_change_enqueues_the_backups_that_name_it(example: Any) -> None:
    clock = FakeClock()
    client = FakeClient(clock)
    backups_resource = example.api.resource_for(example.Backup)
    for name, source in (("b1", "cm-a"), ("b2", "cm-a"), ("b3", "cm-b")):
        client.create(backups_resource, {
            "apiVersion": "example.pyctrl.io/v1", "kind": "Backup",
            "metadata": {"name": name, "namespace": "ns"}, "spec": {"source": source}})
    factory = SharedInformerFactory(client, clock=clock)
    queue = _Queue()
    backups = example.watch_sources(factory, queue)
    stop = threading.Event()
    factory.start(stop)
    try:
        # Both caches synced before any ConfigMap exists: every event below finds the index
        # filled (an event that came before the Backup cache synced would find nothing).
        assert factory.wait_for_cache_sync(stop, timeout=10)
        assert isinstance(backups.get("ns", "b1"), example.Backup)
        assert [b.metadata.name for b in backups.by_index("spec.source", "ns/cm-b")] == ["b3"]
        for name in ("cm-b", "cm-a"):
            client.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": "ns"},
                                       "data": {"k": "v"}})
        eventually(lambda: len(queue.added) >= 3, what="the two creates' requests")
        assert queue.take() == {"ns/b1", "ns/b2", "ns/b3"}

        cm = client.get(CONFIGMAPS, "cm-a", "ns")
        client.update(CONFIGMAPS, {**cm, "data": {"k": "changed"}}, "ns")
        eventually(lambda: len(queue.added) >= 2, what="the update's requests")
        assert queue.take() == {"ns/b1", "ns/b2"}
    finally:
        stop.set()
        factory.shutdown()
