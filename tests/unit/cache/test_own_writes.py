"""Read your own writes on the fakes: a reconciler writes a Backup's status, then the Backup is
requeued (a child's event) before the informer's watch delivers that write. Without
OwnWrites the second reconcile reads the stale Backup and its status write conflicts (the
new user's Conflict 409); with it, the read waits until the cache holds the write, bounded
by the Clock (past the bound it returns the cached object and counts it)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Unpack

import orjson
import pytest
from prometheus_client import CollectorRegistry

from pyctrl import Conflict, Request, TypedClient, api
from pyctrl.cache import OwnWrites, RecordingClient, SharedInformerFactory
from pyctrl.kube.body import decode_head
from pyctrl.kube.forwarding import ForwardingClient
from pyctrl.kube.interface import Client, WatchEvent, WatchStream
from pyctrl.kube.options import ListOptions, WatchArgs
from pyctrl.kube.resource import Resource
from pyctrl.testing import FakeClient, FakeClock
from tests.waiting import eventually


class BackupStatus(api.Struct):
    reconciles: int = 0


class BackupSpec(api.Struct):
    source: str = ""


@api.kind("example.io/v1", "Backup")
class Backup(api.Object):
    spec: BackupSpec = api.field(default_factory=BackupSpec)
    status: BackupStatus = api.field(default_factory=BackupStatus)


BACKUPS = api.resource_for(Backup)


class _Held:
    """A watch stream whose events wait for ``gate.release()``."""

    def __init__(self, inner: WatchStream, gate: LaggingWatches) -> None:
        self.inner, self.gate = inner, gate

    def __iter__(self) -> Iterator[WatchEvent]:
        for event in self.inner:
            with self.gate.cond:
                while self.gate.held:
                    self.gate.cond.wait()
            yield event

    def close(self) -> None:
        self.inner.close()


class LaggingWatches(ForwardingClient):
    """The Backups' watch lags: its events are held until :meth:`release`."""

    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self.cond = threading.Condition()
        self.held = True

    def release(self) -> None:
        with self.cond:
            self.held = False
            self.cond.notify_all()

    def watch(self, resource: Resource, namespace: str | None = None, *,
              options: ListOptions | None = None, **kwargs: Unpack[WatchArgs]) -> WatchStream:
        stream = super().watch(resource, namespace, options=options, **kwargs)
        return _Held(stream, self) if resource == BACKUPS else stream


class World:
    def __init__(self, *, read_own_writes: bool) -> None:
        self.clock = FakeClock()
        self.fake = FakeClient(self.clock)
        self.fake.create(BACKUPS, {"metadata": {"name": "b", "namespace": "ns"}})
        self.registry = CollectorRegistry()
        self.writes = OwnWrites(clock=self.clock, registry=self.registry, timeout=5.0)
        self.lagging = LaggingWatches(self.fake)
        self.factory = SharedInformerFactory(
            self.lagging, clock=self.clock,
            own_writes=self.writes if read_own_writes else None)
        self.backups = self.factory.lister_for(Backup)
        self.indexer = self.factory.informer_for(Backup).get_indexer()
        self.client = TypedClient(RecordingClient(self.fake, self.writes))
        self.stop = threading.Event()

    def reconcile(self, request: Request) -> None:
        backup = self.backups.get(request.namespace, request.name)
        done = api.replace(backup.status, reconciles=backup.status.reconciles + 1)
        self.client.patch_status(backup, api.replace(backup, status=done))

    def stored(self) -> int:
        status = self.fake.get_object(BACKUPS, "b", "ns").get("status") or {}
        return int(status.get("reconciles", 0))

    def metric(self, name: str) -> float:
        return self.registry.get_sample_value(name, {"resource": "backups"}) or 0.0


@pytest.fixture
def world(request: pytest.FixtureRequest) -> Iterator[World]:
    w = World(read_own_writes=getattr(request, "param", True))
    w.factory.start(w.stop)
    try:
        assert w.factory.wait_for_cache_sync(w.stop, timeout=10)
        yield w
    finally:
        w.lagging.release()
        w.stop.set()
        w.factory.shutdown()


def _requeued(w: World, pool: ThreadPoolExecutor) -> Future[None]:
    """The first reconcile writes status; a child's event requeues the Backup at once, while
    the watch still holds that write back."""
    w.reconcile(Request("ns", "b"))
    assert w.stored() == 1 and w.writes.pending(BACKUPS) == 1
    second = pool.submit(w.reconcile, Request("ns", "b"))
    eventually(lambda: w.indexer.waiting == 1 or second.done(), what="the second read")
    return second


@pytest.mark.parametrize("world", [True, False], ids=["read-own-writes", "without"],
                         indirect=True)
def test_the_requeued_reconcile_sees_its_own_status_write(world: World) -> None:
    with ThreadPoolExecutor(1) as pool:
        second = _requeued(world, pool)
        if world.factory.own_writes is None:  # what a new user's Backup operator saw
            with pytest.raises(Conflict):
                second.result(timeout=10)
            return
        assert not second.done()  # waiting for the cache, not reading it stale
        world.lagging.release()  # the watch catches up
        second.result(timeout=10)
    assert world.stored() == 2
    assert world.writes.pending(BACKUPS) == 1  # the first write seen and forgotten; the second
    assert world.metric("pyctrl_cache_own_write_wait_seconds_count") == 1
    assert world.metric("pyctrl_cache_own_write_timeouts_total") == 0


def test_a_watch_lagging_past_the_bound_gives_the_cached_object_and_is_counted(
        world: World) -> None:
    with ThreadPoolExecutor(1) as pool:
        second = _requeued(world, pool)
        world.clock.step(5.0)  # the bound, in the Clock's time
        with pytest.raises(Conflict):  # the stale object, as before: nothing hangs
            second.result(timeout=10)
    assert world.metric("pyctrl_cache_own_write_timeouts_total") == 1
    assert world.writes.pending(BACKUPS) == 0  # given up: later reads do not wait again
    world.backups.get("ns", "b")  # returns at once
    assert world.metric("pyctrl_cache_own_write_wait_seconds_count") == 1


def test_a_metadata_only_answer_is_recorded_as_the_whole_one() -> None:
    """A status write asking for the answer's metadata only (``answer="metadata"``) leaves
    the same pending write: resourceVersion, uid and labels all live in the metadata."""
    whole = {"apiVersion": "example.io/v1", "kind": "Backup", "status": {"reconciles": 3},
             "metadata": {"name": "b", "namespace": "ns", "uid": "u-1", "resourceVersion": "12",
                          "labels": {"app": "x"}, "managedFields": [{"manager": "m"}]}}
    pending = []
    for answer in (whole, decode_head(orjson.dumps(whole))):
        writes = OwnWrites(clock=FakeClock())
        writes.record(BACKUPS, answer, "ns")
        pending.append(writes._pending)
    assert pending[0] == pending[1] and pending[0][("example.io", "backups")]["ns/b"].uid == "u-1"
