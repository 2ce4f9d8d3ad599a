"""The ``start`` fixture of the Builder tests: run the test module's ``manager`` fixture."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from pyctrl import Manager
from tests.threads import Runner, start_manager


@pytest.fixture
def start(manager: Manager) -> Iterator[Callable[[], None]]:
    """Call it once the test has wired ``manager``: runs it until the test ends (stopped,
    joined, and what ``run`` raised fails the test)."""
    runners: list[Runner] = []

    def run() -> None:
        runners.append(start_manager(manager))

    yield run
    for runner in runners:
        runner.shutdown()
