"""GC tuning: the Manager freezes the heap (and sets the gen-0 threshold) once, after every
informer synced, never before; off unless asked."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pyctrl import _gctune
from pyctrl._gctune import GCOptions, tune_after_sync
from pyctrl.kube.interface import RawObject
from pyctrl.kube.resource import CONFIGMAPS
from pyctrl.manager import Manager, ManagerOptions, MetricsOptions
from pyctrl.testing import Action, FakeClient, FakeClock
from tests.threads import running_manager
from tests.waiting import eventually


class FakeGC:
    """Records what the tuner does to the collector (the real one is process-wide)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.threshold = (700, 10, 10)
        self.done = threading.Event()

    def get_threshold(self) -> tuple[int, int, int]:
        return self.threshold

    def set_threshold(self, *t: int) -> None:
        self.calls.append(("set_threshold", *t))
        self.threshold = (t[0], t[1], t[2])

    def collect(self) -> int:
        self.calls.append(("collect",))
        return 0

    def freeze(self) -> None:
        self.calls.append(("freeze",))
        self.done.set()

    def get_freeze_count(self) -> int:
        return 0


@pytest.fixture
def fake_gc(monkeypatch: pytest.MonkeyPatch) -> FakeGC:
    fake = FakeGC()
    monkeypatch.setattr(_gctune, "gc", fake)
    return fake


def test_the_manager_freezes_once_every_informer_synced(fake_gc: FakeGC) -> None:
    clock = FakeClock()
    client = FakeClient(clock)
    release = threading.Event()

    def slow_list(action: Action) -> RawObject | None:
        release.wait(10)  # the informer cannot sync before the test says so
        return None

    client.prepend_reactor("list", CONFIGMAPS, slow_list)
    options = ManagerOptions(metrics=MetricsOptions(runtime_metrics=False),
                             gc=GCOptions(freeze_after_sync=True, gen0_threshold=5000))
    manager = Manager(client, options, clock=clock)
    informer = manager.informers.informer_for(CONFIGMAPS)
    try:
        with running_manager(manager) as runner:
            eventually(lambda: any(a.verb == "list" for a in client.actions), what="list sent")
            assert not informer.has_synced() and fake_gc.calls == []
            release.set()
            assert fake_gc.done.wait(10)
            assert informer.has_synced()
            assert fake_gc.calls == [("set_threshold", 5000, 10, 10), ("collect",), ("freeze",)]
    finally:
        release.set()
    assert not runner.thread.is_alive()
    assert fake_gc.calls.count(("freeze",)) == 1


def test_off_by_default_and_nothing_when_stopped_first(fake_gc: FakeGC) -> None:
    assert not GCOptions().active
    tune_after_sync(GCOptions(), lambda: True, threading.Event())
    stop = threading.Event()
    stop.set()
    tune_after_sync(GCOptions(freeze_after_sync=True), lambda: False, stop, poll=0.001)
    assert fake_gc.calls == []
    with pytest.raises(ValueError, match="gen0_threshold"):
        GCOptions(gen0_threshold=0)


def test_the_real_collector_is_frozen_and_thresholds_kept() -> None:
    import gc

    before = gc.get_threshold()
    try:
        _gctune.apply(GCOptions(freeze_after_sync=True, gen0_threshold=before[0] + 1))
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (before[0] + 1, *before[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_the_cronjob_controller_freezes_by_default_and_takes_flags() -> None:
    from cronjob_controller.__main__ import build_parser, run

    defaults = build_parser().parse_args([])
    assert (defaults.gc_freeze, defaults.gc_gen0_threshold) == (True, None)
    tuned = build_parser().parse_args(["--gc-freeze=false", "--gc-gen0-threshold", "5000"])
    assert (tuned.gc_freeze, tuned.gc_gen0_threshold) == (False, 5000)
    assert run(build_parser().parse_args(["--gc-gen0-threshold", "0"])) == 2

