"""tests/threads.py: Runner, running() and running_manager() join, report hangs and crashes."""

from __future__ import annotations

import socket
import threading

import pytest

from pyctrl import HealthOptions, Manager, ManagerOptions, MetricsOptions
from pyctrl.testing import FakeClient
from tests.threads import Runner, running, running_manager


def test_running_yields_the_stop_event_and_joins_on_exit() -> None:
    seen: list[threading.Thread] = []

    def run(stop: threading.Event) -> None:
        seen.append(threading.current_thread())
        stop.wait()

    with running(run, name="demo-run") as stop:
        assert not stop.is_set()
    assert stop.is_set()
    assert [t.name for t in seen] == ["demo-run"] and not seen[0].is_alive()


def test_running_reraises_what_the_thread_raised() -> None:
    def run(stop: threading.Event) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"), running(run, name="crash"):
        pass


def test_a_thread_that_ignores_stop_fails_the_test() -> None:
    release = threading.Event()
    runner = Runner(lambda stop: release.wait(), name="stubborn", join_timeout=0.01).start()
    try:
        with pytest.raises(AssertionError, match="stubborn did not stop"):
            runner.shutdown()
    finally:
        release.set()
        runner.thread.join()


def test_runner_keeps_the_error_for_the_test() -> None:
    def run(stop: threading.Event) -> None:
        raise ValueError("lost lease")

    runner = Runner(run, name="keeps").start()
    with pytest.raises(ValueError, match="lost lease"):
        runner.shutdown()
    assert isinstance(runner.error, ValueError)


def _manager(health: str = "127.0.0.1:0") -> Manager:
    return Manager(FakeClient(), ManagerOptions(health=HealthOptions(bind_address=health),
                                                metrics=MetricsOptions(runtime_metrics=False)))


def test_running_manager_returns_once_the_probes_listen_and_joins_on_exit() -> None:
    manager = _manager()
    with running_manager(manager) as runner:
        assert manager.health_probe_address is not None
        assert runner.thread.is_alive() and runner.thread.name == "manager-run"
    assert not runner.thread.is_alive() and runner.error is None


def test_a_manager_whose_run_raised_fails_the_test() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        manager = _manager(f"127.0.0.1:{taken.getsockname()[1]}")
        with pytest.raises(OSError, match="in use"), running_manager(manager):
            pass


def test_a_manager_that_raises_inside_the_block_fails_on_exit() -> None:
    manager = _manager()
    with pytest.raises(RuntimeError, match="crashed"), running_manager(manager) as runner:
        runner.error = RuntimeError("crashed")  # as if run had raised it while stopping
