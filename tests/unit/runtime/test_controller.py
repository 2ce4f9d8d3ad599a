"""Controller worker loop: requeue rules, errors, concurrency, shutdown, metrics.

The loop is generic in what the queue holds: these tests run a ``Controller[str]`` whose
reconciler is a ``TypedReconciler[str]`` (``"ns/a"`` strings in, the same strings out)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from pyctrl import HealthOptions, ManagerOptions
from pyctrl.controller import Controller
from pyctrl.errors import AdoptionRefused, NotLeader, TerminalError
from pyctrl.reconcile import Result, TypedReconciler
from pyctrl.testing import FakeRecorder
from pyctrl.testing.fake_clock import FakeClock
from tests.threads import Runner, running_manager
from tests.waiting import eventually

Behaviour = Callable[[str, int], Result | None]


class ScriptedReconciler(TypedReconciler[str]):
    """Calls ``behaviour(key, attempt)``; records calls and the structlog context."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.calls: list[str] = []
        self.contexts: list[dict[str, Any]] = []
        self._mu = threading.Lock()

    def count(self, key: str) -> int:
        with self._mu:
            return self.calls.count(key)

    def reconcile(self, request: str) -> Result | None:
        with self._mu:
            attempt = self.calls.count(request)
            self.calls.append(request)
            self.contexts.append(structlog.contextvars.get_contextvars())
        return self.behaviour(request, attempt)


class Harness:
    def __init__(self, behaviour: Behaviour, *, workers: int = 1,
                 wait_for: list[Any] | None = None) -> None:
        self.clock = FakeClock()
        self.registry = CollectorRegistry()
        self.reconciler = ScriptedReconciler(behaviour)
        self.controller: Controller[str] = Controller("demo", self.reconciler, workers=workers,
                                     clock=self.clock, registry=self.registry,
                                     wait_for=wait_for or [])
        self.runner = Runner(self.controller.run, name="controller-run", join_timeout=5)
        self.stop, self.thread = self.runner.stop, self.runner.thread

    def metric(self, name: str, **labels: str) -> float:
        value = self.registry.get_sample_value(name, {"controller": "demo", **labels})
        return value or 0.0

    def shutdown(self) -> None:
        if not self.thread.is_alive():
            self.controller.queue.shut_down()
        self.runner.shutdown()


@pytest.fixture
def make() -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def factory(behaviour: Behaviour, **kwargs: Any) -> Harness:
        h = Harness(behaviour, **kwargs)
        made.append(h)
        h.runner.start()
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


def test_first_reconcile_timestamp_is_set_once(make: Callable[..., Harness]) -> None:
    first = "pyctrl_controller_first_reconcile_timestamp_seconds"
    h = make(lambda key, n: None)
    assert h.metric(first) == 0  # exposed before any reconcile, as 0
    at = h.clock.time()
    h.controller.queue.add("ns/a")
    eventually(lambda: h.metric("controller_runtime_reconcile_total", result="success") == 1)
    assert h.metric(first) == at
    h.clock.step(60)
    h.controller.queue.add("ns/b")
    eventually(lambda: h.metric("controller_runtime_reconcile_total", result="success") == 2)
    assert h.metric(first) == at  # the second reconcile does not move it


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
    # The metric, not the reconciler's call count: it is bumped after the error is logged, so
    # the test does not end while a worker still logs (its line then met pytest's closed
    # capture: "--- Logging error ---" in CI's output).
    eventually(lambda: h.metric("controller_runtime_terminal_reconcile_errors_total") == 2)
    assert h.reconciler.count("ns/other") == 1
    assert h.reconciler.count("ns/a") == 1


def test_already_owned_ends_the_reconcile_with_a_warning_event(
        make: Callable[..., Harness]) -> None:
    claimant = {"apiVersion": "test.pyctrl.io/v1", "kind": "Backup", "name": "nightly",
                "uid": "u-1", "controller": True}

    def refused(key: str, n: int) -> Result | None:
        raise AdoptionRefused("settings", None, claimant=claimant, namespace="ns",
                              kind="ConfigMap")

    h = make(refused)
    h.controller.recorder = recorder = FakeRecorder()
    h.controller.queue.add("ns/nightly")
    eventually(lambda: h.metric("controller_runtime_terminal_reconcile_errors_total") == 1)
    assert h.controller.queue.num_requeues("ns/nightly") == 0  # not retried with backoff
    h.clock.step(3600)
    assert h.reconciler.count("ns/nightly") == 1
    (event,) = recorder.records
    assert (event.key, event.type, event.reason) == ("ns/nightly", "Warning", "AlreadyOwned")
    assert "ConfigMap 'settings' exists and has no controller" in event.message


def test_fenced_reconciles_log_a_bounded_number_of_lines(make: Callable[..., Harness]) -> None:
    # A fenced replica: every reconcile's first write is refused, naming its own object. The
    # outage gate keeps the keys (none terminal) and lets one probe through at a time.
    def fenced(key: str, n: int) -> Result | None:
        raise NotLeader(f"refusing update jobs {key}: this replica no longer holds the lease")

    with capture_logs() as logs:
        h = make(fenced)
        for i in range(60):
            h.controller.queue.add(f"ns/cj-{i}")
        eventually(lambda: h.metric("controller_runtime_reconcile_errors_total") >= 1)
        for _ in range(30):  # 30 s of probes, each refused
            h.clock.step(1.0)
            eventually(lambda: h.clock.waiters() >= 2)
    errors = h.metric("controller_runtime_reconcile_errors_total")
    assert 1 <= errors <= 25, "probes only: one per probe delay (0.25 s doubling to 2 s)"
    assert h.metric("controller_runtime_terminal_reconcile_errors_total") == 0
    assert all(h.controller.queue.num_requeues(f"ns/cj-{i}") == 0 for i in range(60))
    lines = [e for e in logs if "refusing update jobs" in str(e)]
    assert 1 <= len(lines) <= 8, [e["event"] for e in lines]  # sampled: burst, then counts
    assert all(e["error"] == "NotLeader" for e in lines), lines


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


def test_invalid_return_value_is_an_error_and_the_worker_survives(
    make: Callable[..., Harness],
) -> None:
    def bad_return(key: str, n: int) -> Result | None:
        if key == "ns/bad" and n == 0:
            return 30  # type: ignore[return-value]  # the bug under test
        return None

    h = make(bad_return)  # one worker: if it died, nothing else would ever run
    h.controller.queue.add("ns/bad")
    eventually(lambda: h.metric("controller_runtime_reconcile_errors_total") == 1,
               what="invalid return counted as an error")
    assert h.metric("controller_runtime_reconcile_total", result="error") == 1
    assert h.controller.queue.num_requeues("ns/bad") == 1, "requeued with backoff"
    h.controller.queue.add("ns/good")
    eventually(lambda: h.reconciler.count("ns/good") == 1, what="worker still alive")
    assert h.controller.check() is None
    h.clock.step(1)
    eventually(lambda: h.reconciler.count("ns/bad") == 2, what="retried after backoff")
    eventually(lambda: h.controller.queue.num_requeues("ns/bad") == 0, what="forgotten")


@pytest.mark.parametrize("bad", [Result(requeue_after=float("nan")),
                                 Result(requeue_after="5")])  # type: ignore[arg-type]
def test_malformed_result_is_an_error(make: Callable[..., Harness], bad: Result) -> None:
    h = make(lambda key, n: bad if n == 0 else None)
    h.controller.queue.add("ns/a")
    eventually(lambda: h.metric("controller_runtime_reconcile_errors_total") == 1)
    assert h.controller.queue.num_requeues("ns/a") == 1
    h.controller.queue.add("ns/b")
    eventually(lambda: h.reconciler.count("ns/b") == 1, what="worker still alive")


class _NotAnException(BaseException):
    """A BaseException subclass that is not an Exception (like GeneratorExit)."""


def test_base_exception_from_reconciler_does_not_kill_the_worker(
    make: Callable[..., Harness],
) -> None:
    def raise_base(key: str, n: int) -> Result | None:
        if key == "ns/bad" and n == 0:
            raise _NotAnException("not an Exception")
        return None

    h = make(raise_base)
    h.controller.queue.add("ns/bad")
    eventually(lambda: h.metric("controller_runtime_reconcile_errors_total") == 1)
    assert h.controller.queue.num_requeues("ns/bad") == 1
    h.controller.queue.add("ns/good")
    eventually(lambda: h.reconciler.count("ns/good") == 1, what="worker still alive")
    assert h.controller.check() is None


def _poison_queue(controller: Controller[str], poison: str) -> None:
    """Make the worker loop itself raise (outside any reconcile) when it finishes ``poison``.

    Patches ``done``, not ``get``: the workers are already running, and a worker blocked in
    the real ``get`` since before the patch would take ``poison`` unpatched (a race seen
    under load). ``done`` is looked up after the key was taken, so the patch always applies.
    """
    queue = controller.queue
    real_done = queue.done

    def done(item: str) -> None:
        real_done(item)
        if item == poison:
            raise RuntimeError("injected failure in the worker loop")

    queue.done = done  # type: ignore[method-assign]


def test_a_worker_that_dies_fails_the_health_check(make: Callable[..., Harness]) -> None:
    h = make(lambda key, n: None, workers=2)
    _poison_queue(h.controller, "ns/poison")
    h.controller.queue.add("ns/a")
    eventually(lambda: h.reconciler.count("ns/a") == 1)
    assert h.controller.check() is None
    h.controller.queue.add("ns/poison")
    eventually(lambda: h.controller.check() is not None, what="check fails")
    reason = h.controller.check() or ""
    assert "1 of 2 worker threads ended" in reason and "injected failure" in reason
    h.stop.set()
    h.thread.join(5)
    assert h.controller.check() is None, "a stopped controller is not unhealthy"


def test_system_exit_from_reconciler_requeues_and_fails_the_health_check(
    make: Callable[..., Harness],
) -> None:
    def exit_(key: str, n: int) -> Result | None:
        raise SystemExit(3)

    h = make(exit_)
    h.controller.queue.add("ns/a")
    eventually(lambda: h.controller.check() is not None, what="check fails")
    assert h.metric("controller_runtime_reconcile_errors_total") == 1
    assert h.controller.queue.num_requeues("ns/a") == 1


def test_manager_healthz_fails_when_a_worker_dies() -> None:
    import urllib.error
    import urllib.request

    from pyctrl.manager import Manager
    from pyctrl.testing.fake_client import FakeClient

    clock = FakeClock()
    manager = Manager(FakeClient(clock),
                      ManagerOptions(health=HealthOptions(bind_address="127.0.0.1:0")),
                      clock=clock)
    reconciler = ScriptedReconciler(lambda key, n: None)
    controller: Controller[str] = Controller("demo", reconciler, clock=clock,
                                             registry=manager.registry)
    _poison_queue(controller, "ns/poison")
    manager.add_controller(controller)
    def healthz() -> tuple[int, str]:
        address = manager.health_probe_address
        assert address is not None
        url = f"http://127.0.0.1:{address[1]}/healthz?verbose"
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            with err:  # closes its response (3.14 warns of one left open)
                return err.code, err.read().decode()

    with running_manager(manager) as runner:
        controller.queue.add("ns/a")
        eventually(lambda: reconciler.count("ns/a") == 1, what="controller running")
        assert healthz()[0] == 200
        controller.queue.add("ns/poison")
        eventually(lambda: healthz()[0] == 500, what="/healthz fails")
        assert "[-]controller-demo-workers failed" in healthz()[1]
    assert not runner.thread.is_alive()
