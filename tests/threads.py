"""Running a ``run(stop)`` component on a thread in a test, in one place.

Contract: :class:`Runner` starts ``target(stop)`` on a named thread and keeps what it raised
(``error``) instead of losing it to ``threading.excepthook``; :meth:`Runner.shutdown` sets
the stop Event, joins the thread within ``join_timeout`` seconds and fails the test when the
thread is still alive (a component that ignores its stop signal is a bug, not a slow test).
:func:`running` is the context-manager form: it yields the stop Event, shuts the thread down
on exit (also when the body failed) and re-raises what the thread raised, so a component
that crashed in the background fails the test that ran it.

Nothing here sleeps: waiting for a condition is tests/waiting.py's (integration) or
tests/unit/runtime/helpers.py's (unit) job.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Runner", "running"]

DEFAULT_JOIN_TIMEOUT = 10.0


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

    def shutdown(self) -> None:
        """Set the stop Event and join; fail when the thread outlives ``join_timeout``."""
        self.stop.set()
        self.thread.join(self._join_timeout)
        assert not self.thread.is_alive(), (
            f"{self.name} did not stop within {self._join_timeout}s of its stop signal")


@contextmanager
def running(target: Callable[[threading.Event], object], *, name: str,
            join_timeout: float = DEFAULT_JOIN_TIMEOUT) -> Iterator[threading.Event]:
    """Run ``target(stop)`` on a thread for the ``with`` body; see module docstring."""
    runner = Runner(target, name=name, join_timeout=join_timeout).start()
    try:
        yield runner.stop
    finally:
        runner.shutdown()
    if runner.error is not None:
        raise runner.error
