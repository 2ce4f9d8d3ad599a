"""Runnables: what a Manager runs besides its controllers, each in its own named thread.

Contract (controller-runtime's ``Runnable`` and runnable groups, in threads):

* A :class:`Runnable` is anything with ``run(stop)`` that works until ``stop`` is set.
* :class:`RunnableGroup` holds them with a unique name each (the runnable's ``name``
  attribute when it is a non-empty string, else its class name; ``-2``, ``-3``... on
  repeats) and whether it ``needs_leader``. ``start(stop, needs_leader=...)`` starts that
  half of the group, one daemon thread ``runnable-<name>`` each; ``join(entries, timeout)``
  joins them within one deadline on the group's clock and logs the ones still running.
* A runnable that raises, or returns before its stop is set, is logged and recorded as a
  failure: :meth:`RunnableGroup.check` (a /healthz check) reports every failure until the
  runnable is started again.
* Adding is refused once the group is sealed (the Manager seals it when it runs).
* :func:`run_controllers` runs controllers (anything with ``name`` and ``run(stop)``) the way
  the Manager does while it leads: once ``synced()`` reports nothing pending (polled on
  ``stop``'s real-time wait, so a FakeClock nobody steps cannot hang it; returns at once if
  ``stop`` is set first), one daemon thread ``controller-<name>`` each until ``stop``; then
  they get ``timeout`` seconds (on the clock) to finish in-flight work, and the ones still
  busy are logged and abandoned.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import structlog

from pyctrl.clock import Clock

__all__ = ["NamedRunnable", "Runnable", "RunnableEntry", "RunnableGroup", "run_controllers"]

log = structlog.get_logger("pyctrl.manager")


class Runnable(Protocol):
    """Anything the Manager can run: ``run(stop)`` works until ``stop`` is set, then returns."""

    def run(self, stop: threading.Event) -> None: ...


class NamedRunnable(Protocol):
    """A controller as :func:`run_controllers` sees it."""

    @property
    def name(self) -> str: ...

    def run(self, stop: threading.Event) -> None: ...


@dataclass(eq=False)
class RunnableEntry:
    """One runnable of a group, with its thread and its last failure."""

    runnable: Runnable
    name: str
    needs_leader: bool
    thread: threading.Thread | None = None
    failure: str | None = None


class RunnableGroup:
    """The runnables of one Manager (see module docstring)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._mu = threading.Lock()
        self._entries: list[RunnableEntry] = []
        self._sealed = False

    def add(self, runnable: Runnable, *, needs_leader: bool = False) -> str:
        """Add ``runnable``; returns the name it runs under."""
        with self._mu:
            if self._sealed:
                raise RuntimeError("add runnables before Manager.run")
            base = getattr(runnable, "name", None)
            base = base if isinstance(base, str) and base else type(runnable).__name__
            taken = {e.name for e in self._entries}
            name, n = base, 1
            while name in taken:
                n += 1
                name = f"{base}-{n}"
            self._entries.append(RunnableEntry(runnable, name, needs_leader))
            return name

    def seal(self) -> None:
        with self._mu:
            self._sealed = True

    def entries(self, *, needs_leader: bool) -> list[RunnableEntry]:
        with self._mu:
            return [e for e in self._entries if e.needs_leader == needs_leader]

    def check(self) -> str | None:
        failures = [e.failure for e in self._entries if e.failure is not None]
        return "; ".join(failures) if failures else None

    def start(self, stop: threading.Event, *, needs_leader: bool) -> list[RunnableEntry]:
        """Start the runnables with this ``needs_leader``; returns them (to join)."""
        started = self.entries(needs_leader=needs_leader)
        for entry in started:
            entry.failure = None
            entry.thread = threading.Thread(target=self._run, args=(entry, stop),
                                            name=f"runnable-{entry.name}", daemon=True)
            entry.thread.start()
        return started

    def join(self, entries: list[RunnableEntry], timeout: float) -> None:
        deadline = self._clock.monotonic() + timeout
        for entry in entries:
            if entry.thread is not None:
                entry.thread.join(max(0.0, deadline - self._clock.monotonic()))
        stuck = [e.name for e in entries if e.thread is not None and e.thread.is_alive()]
        if stuck:
            log.error("runnables still running after the graceful shutdown timeout",
                      runnables=stuck, timeout=timeout)

    @staticmethod
    def _run(entry: RunnableEntry, stop: threading.Event) -> None:
        try:
            entry.runnable.run(stop)
        except Exception as err:
            log.exception("runnable failed", runnable=entry.name)
            entry.failure = f"{entry.name} failed: {type(err).__name__}: {err}"
            return
        if not stop.is_set():
            log.error("runnable returned before it was stopped", runnable=entry.name)
            entry.failure = f"{entry.name} exited"


def run_controllers(controllers: Sequence[NamedRunnable], stop: threading.Event, *,
                    synced: Callable[[], str | None], clock: Clock, timeout: float,
                    poll: float = 0.05) -> None:
    """Run ``controllers`` until ``stop``, then give them ``timeout`` (see module docstring)."""
    while synced() is not None:
        if stop.wait(poll):
            return
    threads = [threading.Thread(target=c.run, args=(stop,), name=f"controller-{c.name}",
                                daemon=True) for c in controllers]
    for t in threads:
        t.start()
    log.info("controllers started", count=len(threads))
    stop.wait()
    deadline = clock.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - clock.monotonic()))
    stuck = [t.name for t in threads if t.is_alive()]
    if stuck:
        log.error("graceful shutdown timed out; abandoning busy workers", controllers=stuck,
                  timeout=timeout)
