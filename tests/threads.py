"""Running a ``run(stop)`` component (a Manager above all) on a thread in a test, in one place.

Contract: :class:`Runner` starts ``target(stop)`` on a named thread and keeps what it raised
(``error``) instead of losing it to ``threading.excepthook``. :meth:`Runner.stop_and_join`
sets the stop Event, joins the thread within ``join_timeout`` seconds and fails the test when
the thread is still alive (a component that ignores its stop signal is a bug, not a slow
test); :meth:`Runner.shutdown` does that and then re-raises what the thread raised, so a
component that crashed in the background fails the test that ran it. :func:`running` is the
context-manager form: it yields the stop Event, stops and joins on exit (also when the body
failed) and then re-raises what the thread raised.

The one way to run a Manager: :func:`start_manager` runs ``manager.run`` on a :class:`Runner`
and returns once the servers the manager was configured with (probes, metrics) listen, or
fails with what ``run`` raised if it ended first; :func:`running_manager` is its
context-manager form (yields the Runner; a clean stop joins and fails on an error).

Waiting for a condition is tests/waiting.py's job; nothing here sleeps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyctrl.manager import Manager
from tests.waiting import eventually

__all__ = ["Runner", "running", "running_manager", "start_manager"]

DEFAULT_JOIN_TIMEOUT = 10.0
_OFF = "0"  # the bind address of a server that is not started


class Runner:
    """``target(stop)`` on a thread named ``name`` (see module docstring)."""

    def __init__(self, target: Callable[[threading.Event], object], *, name: str,
                 join_timeout: float = DEFAULT_JOIN_TIMEOUT) -> None:
        self.name = name
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self._target = target
        self._join_timeout = join_timeout
        self.thread = threading.Thread(target=self._run, name=name)

    def _run(self) -> None:
        try:
            self._target(self.stop)
        except BaseException as err:  # kept for the test to check, never lost
            self.error = err

    def start(self) -> Runner:
        self.thread.start()
        return self

    def stop_and_join(self) -> None:
        """Set the stop Event and join; fail when the thread outlives ``join_timeout``."""
        self.stop.set()
        self.thread.join(self._join_timeout)
        assert not self.thread.is_alive(), (
            f"{self.name} did not stop within {self._join_timeout}s of its stop signal")

    def shutdown(self) -> None:
        """:meth:`stop_and_join`, then re-raise what the thread raised."""
        self.stop_and_join()
        if self.error is not None:
            raise self.error


@contextmanager
def running(target: Callable[[threading.Event], object], *, name: str,
            join_timeout: float = DEFAULT_JOIN_TIMEOUT) -> Iterator[threading.Event]:
    """Run ``target(stop)`` on a thread for the ``with`` body; see module docstring."""
    runner = Runner(target, name=name, join_timeout=join_timeout).start()
    try:
        yield runner.stop
    finally:
        runner.stop_and_join()
    if runner.error is not None:
        raise runner.error


def _servers_up(manager: Manager) -> bool:
    options = manager.options
    return ((options.health.bind_address == _OFF or manager.health_probe_address is not None)
            and (options.metrics.bind_address == _OFF or manager.metrics_address is not None))


def start_manager(manager: Manager, *, name: str = "manager-run",
                  join_timeout: float = DEFAULT_JOIN_TIMEOUT) -> Runner:
    """``manager.run`` on a thread, once its configured servers listen (module docstring)."""
    runner = Runner(manager.run, name=name, join_timeout=join_timeout).start()
    eventually(lambda: _servers_up(manager) or not runner.thread.is_alive(),
               what=f"{name}: servers up")
    if not runner.thread.is_alive():
        runner.shutdown()  # re-raises what run raised
        raise AssertionError(f"{name}: manager.run returned before its servers were up")
    return runner


@contextmanager
def running_manager(manager: Manager, *, name: str = "manager-run",
                    join_timeout: float = DEFAULT_JOIN_TIMEOUT) -> Iterator[Runner]:
    """:func:`start_manager` for the ``with`` body; stopped and joined on exit (also when the
    body failed), then what ``run`` raised is re-raised."""
    runner = start_manager(manager, name=name, join_timeout=join_timeout)
    try:
        yield runner
    finally:
        runner.stop_and_join()
    if runner.error is not None:
        raise runner.error
