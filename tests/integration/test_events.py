"""EventBroadcaster against a real kube-apiserver: create, count, combine, spam-filter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pyctrl.kube.resource import CONFIGMAPS, EVENTS
from pyctrl.record import COMBINED_PREFIX, EventBroadcaster

pytestmark = pytest.mark.integration


@pytest.fixture
def subject(client: Any, namespace: str) -> dict[str, Any]:
    return dict(client.create(CONFIGMAPS, {"metadata": {"name": "subject"}}, namespace))


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def broadcaster(client: Any, registry: CollectorRegistry) -> Iterator[EventBroadcaster]:
    b = EventBroadcaster(client, component="pyctrl-it", host="it-host", registry=registry)
    yield b
    b.shutdown()


def events_for(client: Any, namespace: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = client.list(EVENTS, namespace)["items"]
    return [e for e in items if e.get("source", {}).get("component") == "pyctrl-it"]


def test_identical_events_become_one_event_with_a_count(
    client: Any, namespace: str, subject: dict[str, Any], broadcaster: EventBroadcaster
) -> None:
    rec = broadcaster.new_recorder()
    for _ in range(4):
        rec.event(subject, "Warning", "BackOff", "restarting failed container")
    assert broadcaster.wait_idle(20)
    [event] = events_for(client, namespace)
    assert event["count"] == 4
    assert event["involvedObject"]["uid"] == subject["metadata"]["uid"]
    assert event["involvedObject"]["kind"] == "ConfigMap"
    assert event["source"] == {"component": "pyctrl-it", "host": "it-host"}
    assert event["reportingComponent"] == "pyctrl-it"


def test_similar_events_are_combined(
    client: Any, namespace: str, subject: dict[str, Any], broadcaster: EventBroadcaster
) -> None:
    rec = broadcaster.new_recorder()
    for i in range(15):
        rec.event(subject, "Normal", "Progress", f"step {i} done")
    assert broadcaster.wait_idle(20)
    events = events_for(client, namespace)
    combined = [e for e in events if e["message"].startswith(COMBINED_PREFIX)]
    assert len(events) == 10
    assert len(combined) == 1 and combined[0]["count"] == 6


def test_spam_filter_caps_events_per_object(
    client: Any, namespace: str, subject: dict[str, Any], broadcaster: EventBroadcaster,
    registry: CollectorRegistry,
) -> None:
    rec = broadcaster.new_recorder()
    for i in range(40):
        rec.event(subject, "Normal", f"Reason{i % 5}", "same message")
    assert broadcaster.wait_idle(20)
    events = events_for(client, namespace)
    assert sum(e["count"] for e in events) == 25
    assert registry.get_sample_value("pyctrl_events_dropped_total", {"reason": "spam"}) == 15
