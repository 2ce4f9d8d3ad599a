"""Fixtures for the CronJob controller's integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from pyctrl import RESTClient
from pyctrl.testing import FakeClock
from tests.integration.cronjob.env import Env


def _env(client: RESTClient, namespace: str) -> Iterator[Env]:
    e = Env(client, namespace, FakeClock(datetime.now(UTC)))
    try:
        yield e
    finally:
        e.stop_all()


@pytest.fixture
def env(client: RESTClient, namespace: str) -> Iterator[Env]:
    """A test namespace and a FakeClock starting at the real current time."""
    yield from _env(client, namespace)


@pytest.fixture
def pods_env(pods_client: RESTClient, pods_namespace: str) -> Iterator[Env]:
    """The same on the pods-mode control plane, where Jobs' pods run on kwok."""
    yield from _env(pods_client, pods_namespace)
