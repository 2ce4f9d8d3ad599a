"""pyctrl.serving.gcmetrics: every collection is observed, by generation, in each live registry."""

from __future__ import annotations

import gc

from prometheus_client import CollectorRegistry

from pyctrl import Manager, ManagerOptions, MetricsOptions
from pyctrl.serving.gcmetrics import gc_pause_histogram, live_sinks
from pyctrl.testing import FakeClient

NO_RUNTIME_METRICS = ManagerOptions(metrics=MetricsOptions(runtime_metrics=False))


def _count(registry: CollectorRegistry, generation: str) -> float:
    value = registry.get_sample_value("python_gc_duration_seconds_count",
                                      {"generation": generation})
    return value or 0.0


def test_each_collection_is_observed_by_generation_in_every_registry() -> None:
    first, second = CollectorRegistry(), CollectorRegistry()
    gc_pause_histogram(first)
    gc_pause_histogram(second)
    before = _count(first, "2"), _count(second, "2"), _count(first, "0")

    gc.collect(2)
    gc.collect(2)
    gc.collect(0)

    assert _count(first, "2") == before[0] + 2
    assert _count(second, "2") == before[1] + 2
    assert _count(first, "0") == before[2] + 1
    total = first.get_sample_value("python_gc_duration_seconds_sum", {"generation": "2"})
    assert total is not None and total > 0


def test_a_dropped_registry_is_no_longer_fed() -> None:
    registry: CollectorRegistry | None = CollectorRegistry()
    gc_pause_histogram(registry)
    before = live_sinks()
    registry = None
    gc.collect()
    assert live_sinks() == before - 1
    gc_pause_histogram(None)  # an unregistered histogram is never fed
    assert live_sinks() == before - 1


def test_the_manager_exports_gc_pauses_unless_runtime_metrics_are_off() -> None:
    with_runtime = Manager(FakeClient())
    without = Manager(FakeClient(), NO_RUNTIME_METRICS)
    gc.collect(1)
    assert _count(with_runtime.registry, "1") >= 1
    assert without.registry.get_sample_value("python_gc_duration_seconds_count",
                                             {"generation": "1"}) is None
