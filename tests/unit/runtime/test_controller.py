"""Controller worker loop: requeue rules, errors, concurrency, shutdown, metrics."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog
from prometheus_client import CollectorRegistry

from pyctrl.controller import Controller, Result
from pyctrl.errors import TerminalError
from pyctrl.testing.fake_clock import FakeClock
from tests.unit.runtime.helpers import eventually

Behaviour = Callable[[str, int], Result | None]


class ScriptedReconciler:
    """Calls ``behaviour(key, attempt)``; records calls and the structlog context."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.calls: list[str] = []
        self.contexts: list[dict[str, Any]] = []
        self._mu = threading.Lock()

    def count(self, key: str) -> int:
        with self._mu:
            return self.calls.count(key)

    def reconcile(self, key: str) -> Result | None:
        with self._mu:
            attempt = self.calls.count(key)
            self.calls.append(key)
            self.contexts.append(structlog.contextvars.get_contextvars())
        return self.behaviour(key, attempt)


class Harness:
    def __init__(self, behaviour: Behaviour, *, workers: int = 1,
                 wait_for: list[Any] | None = None) -> None:
        self.clock = FakeClock()
        self.registry = CollectorRegistry()
        self.reconciler = ScriptedReconciler(behaviour)
        self.controller = Controller("demo", self.reconciler, workers=workers,
                                     clock=self.clock, registry=self.registry,
                                     wait_for=wait_for or [])
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.controller.run, args=(self.stop,),
                                       name="controller-run")

    def metric(self, name: str, **labels: str) -> float:
        value = self.registry.get_sample_value(name, {"controller": "demo", **labels})
        return value or 0.0

    def shutdown(self) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(5)
            assert not self.thread.is_alive()
        else:
            self.controller.queue.shut_down()


@pytest.fixture
def make() -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def factory(behaviour: Behaviour, **kwargs: Any) -> Harness:
        h = Harness(behaviour, **kwargs)
        made.append(h)
        h.thread.start()
        return h

    yield factory
    for h in made:
        h.shutdown()


def test_success_forgets_and_counts(make: Callable[..., Harness]) -> None:
    h = make(lambda key, n: None)
    h.controller.queue.add("ns/a")
    eventually(lambda: h.metric("controller_runtime_reconcile_total", result="success") == 1)
    assert h.controller.queue.num_requeues("ns/a") == 0
    assert h.metric("controller_runtime_max_concurrent_reconciles") == 1
    assert h.metric("controller_runtime_reconcile_time_seconds_count") == 1
    assert h.metric("controller_runtime_active_workers") == 0


def test_requeue_after_runs_again_after_the_delay(make: Callable[..., Harness]) -> None:
    h = make(lambda key, n: Result(requeue_after=30) if n == 0 else None)
    h.controller.queue.add("ns/a")
    eventually(lambda: h.metric("controller_runtime_reconcile_total", result="requeue_after")
               == 1)
    assert h.controller.queue.num_requeues("ns/a") == 0
    h.clock.step(29)
    assert h.reconciler.count("ns/a") == 1
    h.clock.step(1)
    eventually(lambda: h.reconciler.count("ns/a") == 2, what="second run after 30s")


def test_requeue_true_is_rate_limited(make: Callable[..., Harness]) -> None:
    h = make(lambda key, n: Result(requeue=True) if n < 2 else None)
    h.controller.queue.add("ns/a")
    eventually(lambda: h.metric("controller_runtime_reconcile_total", result="requeue") == 1)
    assert h.controller.queue.num_requeues("ns/a") == 1
    for expected in (2, 3):
        h.clock.step(1)
        eventually(lambda e=expected: h.reconciler.count("ns/a") == e)  # type: ignore[misc]
    eventually(lambda: h.controller.queue.num_requeues("ns/a") == 0, what="forgotten")


def test_exception_requeues_with_backoff_and_worker_survives(
    make: Callable[..., Harness],
) -> None:
    def boom(key: str, n: int) -> Result | None:
        if key == "ns/bad" and n == 0:
            raise RuntimeError("transient")
        return None

    h = make(boom)
    h.controller.queue.add("ns/bad")
    eventually(lambda: h.metric("controller_runtime_reconcile_errors_total") == 1)
    assert h.metric("controller_runtime_reconcile_total", result="error") == 1
    assert h.controller.queue.num_requeues("ns/bad") == 1
    h.controller.queue.add("ns/good")
    eventually(lambda: h.reconciler.count("ns/good") == 1, what="worker still alive")
    h.clock.step(1)
    eventually(lambda: h.reconciler.count("ns/bad") == 2, what="retried after backoff")


def test_terminal_error_is_counted_and_not_retried(make: Callable[..., Harness]) -> None:
    def terminal(key: str, n: int) -> Result | None:
        raise TerminalError("spec is invalid")

    h = make(terminal)
    h.controller.queue.add("ns/a")
    eventually(lambda: h.metric("controller_runtime_terminal_reconcile_errors_total") == 1)
    assert h.metric("controller_runtime_reconcile_errors_total") == 1
    assert h.controller.queue.num_requeues("ns/a") == 0
    h.clock.step(3600)
    h.controller.queue.add("ns/other")
    eventually(lambda: h.reconciler.count("ns/other") == 1)
    assert h.reconciler.count("ns/a") == 1


def test_one_key_is_never_reconciled_concurrently(make: Callable[..., Harness]) -> None:
    gate = threading.Event()
    in_flight: dict[str, int] = {}
    peak: dict[str, int] = {}
    mu = threading.Lock()

    def slow(key: str, n: int) -> Result | None:
        with mu:
            in_flight[key] = in_flight.get(key, 0) + 1
            peak[key] = max(peak.get(key, 0), in_flight[key])
        if n == 0:
            gate.wait(5)
        with mu:
            in_flight[key] -= 1
        return None

    h = make(slow, workers=4)
    q = h.controller.queue
    q.add("ns/a")
    eventually(lambda: h.reconciler.count("ns/a") == 1)
    eventually(lambda: h.metric("controller_runtime_active_workers") == 1)
    for _ in range(3):
        q.add("ns/a")  # dirty while processing: must wait for the first run
    q.add("ns/b")
    eventually(lambda: h.reconciler.count("ns/b") == 1, what="other keys keep flowing")
    assert h.reconciler.count("ns/a") == 1
    gate.set()
    eventually(lambda: h.reconciler.count("ns/a") == 2, what="re-run once after done")
    assert peak["ns/a"] == 1


def test_each_reconcile_logs_with_its_own_reconcile_id(make: Callable[..., Harness]) -> None:
    h = make(lambda key, n: None)
    h.controller.queue.add("ns/a")
    h.controller.queue.add("ns/b")
    eventually(lambda: len(h.reconciler.contexts) == 2)
    first, second = h.reconciler.contexts
    assert first["controller"] == "demo" and first["key"] == "ns/a"
    assert second["key"] == "ns/b"
    assert first["reconcile_id"] != second["reconcile_id"]
    assert structlog.contextvars.get_contextvars().get("reconcile_id") is None


def test_workers_wait_for_caches_to_sync(make: Callable[..., Harness]) -> None:
    class Cache:
        synced = False

        def has_synced(self) -> bool:
            return self.synced

    cache = Cache()
    h = make(lambda key, n: None, wait_for=[cache])
    h.controller.queue.add("ns/a")
    assert not any(t.name.startswith("demo-worker") for t in threading.enumerate())
    assert h.reconciler.calls == []
    cache.synced = True
    eventually(lambda: h.reconciler.count("ns/a") == 1)


def test_stop_lets_in_flight_reconcile_finish_and_starts_nothing_new(
    make: Callable[..., Harness],
) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(key: str, n: int) -> Result | None:
        if key == "ns/a":
            entered.set()
            release.wait(5)
        return None

    h = make(slow)
    h.controller.queue.add("ns/a")
    assert entered.wait(5)
    h.controller.queue.add("ns/b")
    h.stop.set()
    assert h.thread.is_alive(), "run waits for the in-flight reconcile"
    release.set()
    h.thread.join(5)
    assert not h.thread.is_alive()
    assert h.metric("controller_runtime_reconcile_total", result="success") == 1
    assert h.reconciler.calls == ["ns/a"]


def test_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="worker"):
        Controller("x", ScriptedReconciler(lambda k, n: None), workers=0)
