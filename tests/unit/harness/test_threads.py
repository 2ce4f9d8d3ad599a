"""tests/threads.py: the one running()/Runner helper joins, reports hangs and crashes."""

from __future__ import annotations

import threading

import pytest

from tests.threads import Runner, running


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
    runner.shutdown()
    assert isinstance(runner.error, ValueError)
