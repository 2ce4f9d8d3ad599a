"""Unit-test fixtures: every unit test runs inside a thread-leak check; ``runners`` stops the
threads a test started."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Iterator

import pytest
import structlog

from tests.threads import Runner
from tests.waiting import poll

# PYCTRL_SWITCH_INTERVAL=1e-5 makes a GIL build switch threads far more often than its 5 ms
# default, to shake out check-then-act races (docs/DEVELOPMENT.md, "Other Pythons").
if _interval := os.environ.get("PYCTRL_SWITCH_INTERVAL"):
    sys.setswitchinterval(float(_interval))

# Threads the interpreter or test tooling may own; never ours.
_IGNORED_PREFIXES = ("pytest_timeout", "Dummy-", "ThreadPoolExecutor-0")


def _live() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.is_alive()}


@pytest.fixture(autouse=True)
def no_thread_leak() -> Iterator[None]:
    """Fail a test that leaves a thread running after it returns.

    Threads get a short real-time grace period to finish exiting, which is not a sleep-based
    assertion: the check passes as soon as the threads are gone.
    """
    before = _live()
    yield

    def leaked() -> list[threading.Thread]:
        return [t for t in _live() - before if not t.name.startswith(_IGNORED_PREFIXES)]

    poll(lambda: not leaked(), timeout=2.0, interval=0.002)
    rest = leaked()
    assert not rest, f"threads leaked by the test: {[t.name for t in rest]}"


@pytest.fixture(autouse=True)
def no_logging_leak() -> Iterator[None]:
    """Give back the root logger's handlers and level and structlog's configuration as they
    were before the test. A test that runs a command's ``main`` (which calls
    ``configure_logging``) under ``capsys`` otherwise left a handler on the root logger
    writing to that test's capture stream, closed after it: every later test's error line
    then printed "--- Logging error ---" (``ValueError: I/O operation on closed file``)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    config = structlog.get_config()
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.configure(**config)


@pytest.fixture
def runners() -> Iterator[list[Runner]]:
    """The test appends each :class:`Runner` it starts; those still alive are shut down after."""
    made: list[Runner] = []
    yield made
    for r in made:
        if r.thread.is_alive():
            r.shutdown()


def gil_enabled() -> bool:
    """Whether this interpreter runs with the GIL (always so on a build that has one)."""
    probe = getattr(sys, "_is_gil_enabled", None)
    return True if probe is None else bool(probe())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under PYCTRL_EXPECT_NO_GIL=1 (hack/pythons.sh on a free-threaded build), fail the run if
    the GIL is enabled at its end: an extension module imported by pyctrl or a test that does
    not declare free-threading support turns it back on for the whole process."""
    if os.environ.get("PYCTRL_EXPECT_NO_GIL") == "1" and gil_enabled():
        print("\nthe GIL was enabled during the run (PYCTRL_EXPECT_NO_GIL=1)", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

