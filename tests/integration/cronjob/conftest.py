"""Fixtures for the CronJob controller's integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from pyctrl import RESTClient
from pyctrl.testing import FakeClock
from tests.integration.cronjob.env import Env


@pytest.fixture
def env(client: RESTClient, namespace: str) -> Iterator[Env]:
    """A test namespace and a FakeClock starting at the real current time."""
    clock = FakeClock(datetime.now(UTC))
    e = Env(client, namespace, clock)
    try:
        yield e
    finally:
        e.stop_all()
