"""Concurrency stress: several producers and consumers on real threads.

Checks the two promises that matter to controllers: no item is processed by two workers at
once, and every add is followed by a run of that item that starts after the add began. The
producers run in rounds; after each round the queue must go idle and every key's last add
must have been followed by a run, which gives a lost re-add many chances to show.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from pyctrl.workqueue import Queue, RateLimitingQueue, ShutDown
from tests.waiting import eventually

PRODUCERS = 4
CONSUMERS = 4
ROUNDS = 40
ADDS_PER_PRODUCER = 200  # per round
KEYS = 8


@pytest.fixture(autouse=True)
def frequent_thread_switches() -> Iterator[None]:
    """Switch threads every ~10us instead of 5ms so producers and consumers interleave
    inside each other's critical sections rather than running one after the other."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


@pytest.mark.parametrize("metrics", [False, True], ids=["plain", "metered"])
@pytest.mark.parametrize("cls", [Queue, RateLimitingQueue])
def test_no_double_processing_and_nothing_lost(cls: type[Queue[int]], metrics: bool) -> None:
    q = cls(name="stress", registry=CollectorRegistry() if metrics else None)
    check = threading.Lock()
    seq = 0
    last_add: dict[int, int] = {}
    last_start: dict[int, int] = {}
    active: set[int] = set()
    violations: list[str] = []
    processed = [0]

    def produce(p: int) -> None:
        nonlocal seq
        for i in range(ADDS_PER_PRODUCER):
            k = (i * 7 + p) % KEYS
            with check:
                seq += 1
                last_add[k] = seq
            q.add(k)

    def consume() -> None:
        nonlocal seq
        while True:
            try:
                k = q.get()
            except ShutDown:
                return
            with check:
                seq += 1
                last_start[k] = seq
                if k in active:
                    violations.append(f"{k} handed to two workers")
                active.add(k)
                processed[0] += 1
            for _ in range(200):  # a little work, so runs overlap with re-adds
                pass
            with check:
                active.discard(k)
            q.done(k)

    def idle() -> bool:
        with q._lock:
            return not q._queue and not q._processing and not q._dirty

    consumers = [
        threading.Thread(target=consume, name=f"stress-consumer-{c}") for c in range(CONSUMERS)
    ]
    threads = list(consumers)
    stale_rounds: list[dict[int, tuple[int, int | None]]] = []
    try:
        for t in consumers:
            t.start()
        for _ in range(ROUNDS):
            producers = [
                threading.Thread(target=produce, args=(p,), name=f"stress-producer-{p}")
                for p in range(PRODUCERS)
            ]
            threads += producers
            for t in producers:
                t.start()
            for t in producers:
                t.join(30)
            eventually(idle, timeout=30)
            with check:
                stale = {
                    k: (a, last_start.get(k))
                    for k, a in last_add.items()
                    if last_start.get(k, 0) < a
                }
            if stale:
                stale_rounds.append(stale)
    finally:
        q.shut_down(drain=True)
        for t in threads:
            t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert not violations, violations[:5]
    assert set(last_add) == set(range(KEYS))
    assert not stale_rounds, f"items not processed after their last add: {stale_rounds[:3]}"
    assert processed[0] >= KEYS
