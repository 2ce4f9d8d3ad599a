"""pyctrl.collectors.per_registry: one set of collectors per registry, private ones for None."""

from __future__ import annotations

import gc
import threading
import weakref

from prometheus_client import CollectorRegistry, Counter

from pyctrl.collectors import PerRegistry, per_registry


def _counting_factory() -> tuple[list[CollectorRegistry | None], PerRegistry[Counter]]:
    calls: list[CollectorRegistry | None] = []

    def make(registry: CollectorRegistry | None) -> Counter:
        calls.append(registry)
        return Counter("things", "Things.", ["kind"], registry=registry)

    return calls, per_registry(make)


def test_same_registry_gets_the_same_collectors_made_once() -> None:
    calls, counters = _counting_factory()
    reg = CollectorRegistry()
    first = counters(reg)
    assert counters(reg) is first
    first.labels(kind="a").inc()
    assert reg.get_sample_value("things_total", {"kind": "a"}) == 1.0
    assert calls == [reg]


def test_each_registry_gets_its_own_collectors() -> None:
    calls, counters = _counting_factory()
    one, two = CollectorRegistry(), CollectorRegistry()
    assert counters(one) is not counters(two)  # a second registry takes the same names
    assert calls == [one, two]


def test_none_gives_fresh_unregistered_collectors_each_time() -> None:
    calls, counters = _counting_factory()
    a, b = counters(None), counters(None)
    assert a is not b
    a.labels(kind="x").inc()  # usable, exported nowhere
    assert calls == [None, None]


def test_concurrent_first_use_registers_once() -> None:
    calls, counters = _counting_factory()
    reg = CollectorRegistry()
    start = threading.Barrier(8)
    got: list[Counter] = []
    lock = threading.Lock()

    def use() -> None:
        start.wait()
        c = counters(reg)
        with lock:
            got.append(c)

    threads = [threading.Thread(target=use, name=f"use-{i}") for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and all(c is got[0] for c in got)
    assert calls == [reg]  # a second registration would have raised a duplicate error


def test_a_dropped_registry_is_not_kept_alive() -> None:
    calls, counters = _counting_factory()
    reg = CollectorRegistry()
    counters(reg)
    ref = weakref.ref(reg)
    del reg
    calls.clear()
    gc.collect()
    assert ref() is None
