"""What OwnWrites records from each write's answer and when a read counts as having seen it:
a resourceVersion at least the written one (integers, else equal), a delete's absence (or
the object kept by finalizers), only the keys a lister's informer can hold (its namespace,
its label selector); dry runs and failed writes record nothing; old entries are dropped."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pyctrl import CONFIGMAPS, AlreadyExists, NotFound
from pyctrl.cache import Indexer, IndexerLister, OwnWrites, RecordingClient
from pyctrl.cache.ownwrites import FORGET_AFTER
from pyctrl.testing import FakeClient, FakeClock


def _cm(name: str, rv: str = "", ns: str = "a", **md: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, **md}
    if rv:
        meta["resourceVersion"] = rv
    return {"metadata": meta}


class Setup:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.registry = CollectorRegistry()
        self.writes = OwnWrites(clock=self.clock, registry=self.registry, timeout=0.0)
        self.indexer = Indexer()

    def lister(self, namespace: str | None = None,
               label_selector: str | None = None) -> IndexerLister:
        return IndexerLister(self.indexer, CONFIGMAPS, writes=self.writes,
                             namespace=namespace, label_selector=label_selector)

    def stale_reads(self) -> float:
        return self.registry.get_sample_value("pyctrl_cache_own_write_timeouts_total",
                                              {"resource": "configmaps"}) or 0.0

    def waits(self) -> float:
        return self.registry.get_sample_value("pyctrl_cache_own_write_wait_seconds_count",
                                              {"resource": "configmaps"}) or 0.0


@pytest.fixture
def s() -> Setup:
    return Setup()


@pytest.mark.parametrize(("cached", "written", "fresh"), [
    ("9", "10", False), ("10", "10", True), ("11", "10", True),
    ("abc", "abc", True), ("abd", "abc", False), ("10", "x10", False)])
def test_a_read_sees_a_write_at_its_resource_version_or_newer(
        s: Setup, cached: str, written: str, fresh: bool) -> None:
    s.indexer.add(_cm("x", cached))
    s.writes.record(CONFIGMAPS, _cm("x", written), "a")
    s.lister().get("a", "x")
    assert s.stale_reads() == (0 if fresh else 1)
    assert s.writes.pending(CONFIGMAPS) == 0


def test_a_delete_is_seen_once_the_key_is_empty_or_holds_another_object(s: Setup) -> None:
    s.indexer.add(_cm("x", "5", uid="u1"))
    s.writes.record(CONFIGMAPS, {"kind": "Status", "details": {"name": "x", "uid": "u1"}},
                    "a", "x", deleted=True)
    assert s.lister().list("a") and s.stale_reads() == 1
    s.writes.record(CONFIGMAPS, None, "a", "x", deleted=True)
    s.indexer.delete(_cm("x"))
    assert s.lister().list() == [] and s.stale_reads() == 1
    s.indexer.add(_cm("x", "7", uid="u2"))  # recreated by someone: our delete was seen
    s.writes.record(CONFIGMAPS, _cm("x", "6", uid="u1"), "a", deleted=True)
    s.lister().get("a", "x")
    assert s.stale_reads() == 1


def test_a_delete_kept_by_finalizers_waits_for_the_marked_object(s: Setup) -> None:
    s.indexer.add(_cm("x", "5"))
    kept = _cm("x", "6", finalizers=["f"], deletionTimestamp="2026-01-01T00:00:00Z")
    s.writes.record(CONFIGMAPS, kept, "a", deleted=True)
    s.lister().get("a", "x")
    assert s.stale_reads() == 1
    s.writes.record(CONFIGMAPS, kept, "a", deleted=True)
    s.indexer.update(kept)
    s.lister().get("a", "x")
    assert s.stale_reads() == 1


def test_only_writes_the_listers_informer_can_hold_are_waited_for(s: Setup) -> None:
    s.writes.record(CONFIGMAPS, _cm("in-b", "3", ns="b"), "b")
    s.writes.record(CONFIGMAPS, _cm("other", "4", labels={"app": "other"}), "a")
    s.lister(namespace="a", label_selector="app=web").list()
    s.lister(namespace="a").list("c")
    assert s.waits() == 0 and s.writes.pending(CONFIGMAPS) == 2
    s.lister().list()  # a lister of every namespace holds both: waits, then forgets them
    assert s.waits() == 1 and s.stale_reads() == 1 and s.writes.pending(CONFIGMAPS) == 0


def test_dry_runs_and_failed_writes_record_nothing(s: Setup) -> None:
    client = RecordingClient(FakeClient(s.clock), s.writes)
    client.create(CONFIGMAPS, _cm("x"), "a", dry_run=True)
    assert s.writes.pending(CONFIGMAPS) == 0
    client.create(CONFIGMAPS, _cm("x"), "a")
    with pytest.raises(AlreadyExists):
        client.create(CONFIGMAPS, _cm("x"), "a")
    assert s.writes.pending(CONFIGMAPS) == 1
    client.patch(CONFIGMAPS, "x", {"data": {"k": "v"}}, "a")
    client.delete(CONFIGMAPS, "x", "a")
    assert s.writes.pending(CONFIGMAPS) == 1  # one entry a key: the last write's


def test_entries_no_read_looked_at_are_dropped_when_old(s: Setup) -> None:
    s.writes.record(CONFIGMAPS, _cm("old", "1"), "a")
    s.clock.step(FORGET_AFTER + 1)
    for i in range(511):
        s.writes.record(CONFIGMAPS, _cm(f"new-{i}", "2"), "a")
    assert s.writes.pending(CONFIGMAPS) == 511


def test_a_key_deleted_after_the_write_counts_as_seen(s: Setup) -> None:
    s.writes.record(CONFIGMAPS, _cm("x", "10"), "a")
    s.indexer.add(_cm("x", "10"))
    s.indexer.pop(_cm("x", "11"))  # someone deleted it right after: the watch's DELETED
    with pytest.raises(NotFound):
        s.lister().get("a", "x")
    s.writes.record(CONFIGMAPS, _cm("y", "20"), "a")
    s.indexer.pop(_cm("y", "19"))  # an older delete says nothing of our write
    s.lister().list("a")
    assert s.stale_reads() == 1
