"""The sample controller end to end against a real API server (and its garbage collector)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from examples.sample_controller import FOOS, setup
from pyctrl import retry_on_conflict
from pyctrl.errors import NotFound
from pyctrl.kube.resource import DEPLOYMENTS, EVENTS
from pyctrl.manager import Manager
from tests import waiting
from tests.integration.run_manager import example_manager
from tests.threads import running_manager

pytestmark = pytest.mark.integration

T = TypeVar("T")


def eventually(fn: Callable[[], T | None], timeout: float = 20.0) -> T:
    """:func:`tests.waiting.eventually`, counting a failed assertion or a NotFound as "not yet"."""
    def attempt() -> T | None:
        try:
            return fn()
        except (AssertionError, NotFound):
            return None

    value = waiting.eventually(attempt, timeout, interval=0.05)
    assert value is not None
    return value


@pytest.fixture
def manager(client: Any, namespace: str) -> Iterator[Manager]:
    mgr = example_manager(client, namespace, setup)
    with running_manager(mgr, name="sample-manager", join_timeout=30):
        yield mgr


def foo(name: str, deployment: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": FOOS.api_version, "kind": FOOS.kind, "metadata": {"name": name},
            "spec": {"deploymentName": deployment, "replicas": replicas}}


def test_foo_drives_an_owned_deployment_and_status(
    client: Any, namespace: str, manager: Manager
) -> None:
    created = client.create(FOOS, foo("example-foo", "example-dep", 1), namespace)
    dep = eventually(lambda: client.get(DEPLOYMENTS, "example-dep", namespace))
    [owner] = dep["metadata"]["ownerReferences"]
    assert owner["uid"] == created["metadata"]["uid"] and owner["controller"] is True
    assert dep["spec"]["replicas"] == 1

    # The controller writes the Foo's status concurrently: a read-modify-update must re-read
    # and re-apply on 409 Conflict, as any client of an object a controller writes must.
    def scale_foo() -> Any:
        current = client.get(FOOS, "example-foo", namespace)
        current["spec"]["replicas"] = 3
        return client.update(FOOS, current, namespace)

    retry_on_conflict(scale_foo)
    eventually(lambda: client.get(DEPLOYMENTS, "example-dep", namespace)["spec"]["replicas"]
               == 3)

    # No kubelet here: play the deployment controller and report two available replicas.
    def report_available() -> Any:
        dep = client.get(DEPLOYMENTS, "example-dep", namespace)
        dep["status"] = {"replicas": 3, "readyReplicas": 2, "availableReplicas": 2}
        return client.update_status(DEPLOYMENTS, dep, namespace)

    retry_on_conflict(report_available)
    eventually(lambda: (client.get(FOOS, "example-foo", namespace).get("status") or {})
               .get("availableReplicas") == 2)
    eventually(lambda: any(e["reason"] == "Synced" and e["involvedObject"]["name"]
                           == "example-foo" for e in client.list(EVENTS, namespace)["items"]))

    client.delete(FOOS, "example-foo", namespace)

    def gone() -> bool:
        try:
            client.get(DEPLOYMENTS, "example-dep", namespace)
        except NotFound:
            return True
        return False

    eventually(gone, timeout=60)  # kube-controller-manager's garbage collector


def test_foreign_deployment_is_reported_not_adopted(
    client: Any, namespace: str, manager: Manager
) -> None:
    labels = {"app": "other"}
    client.create(DEPLOYMENTS, {
        "metadata": {"name": "taken"},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
    }, namespace)
    client.create(FOOS, foo("squatter", "taken", 2), namespace)
    event = eventually(lambda: next(
        (e for e in client.list(EVENTS, namespace)["items"]
         if e["reason"] == "ErrResourceExists"), None))
    assert event["type"] == "Warning"
    assert event["involvedObject"]["kind"] == "Foo"
    assert "taken" in event["message"]
    dep = client.get(DEPLOYMENTS, "taken", namespace)
    assert dep["spec"]["replicas"] == 1 and not dep["metadata"].get("ownerReferences")
