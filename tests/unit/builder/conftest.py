"""The Builder tests' fixtures: a FakeClient, a Manager on it (a module may declare its own
``client``/``manager`` instead), and ``start``, which runs the module's ``manager``."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from pyctrl import Manager, ManagerOptions, MetricsOptions
from pyctrl.testing import FakeClient, FakeClock
from tests.threads import Runner, start_manager

NO_RUNTIME_METRICS = ManagerOptions(metrics=MetricsOptions(runtime_metrics=False))


@pytest.fixture
def client() -> FakeClient:
    return FakeClient(FakeClock())


@pytest.fixture
def manager(client: FakeClient) -> Manager:
    return Manager(client, NO_RUNTIME_METRICS, clock=FakeClock())


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
