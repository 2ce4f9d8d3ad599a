"""The Website operator (examples/website) against a real API server: the Deployment and the
Service are created, Ready follows the Deployment's available replicas, the finalizer is
removed on delete and the Website goes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from examples.website import FINALIZER, WEBSITES, setup
from pyctrl import DEPLOYMENTS, EVENTS, SERVICES, Manager
from pyctrl.errors import NotFound
from pyctrl.kube import RESTClient
from tests.integration.run_manager import example_manager
from tests.threads import running_manager
from tests.waiting import poll

pytestmark = pytest.mark.integration


@pytest.fixture
def manager(client: RESTClient, namespace: str) -> Iterator[Manager]:
    mgr = example_manager(client, namespace, setup)
    with running_manager(mgr, name="website-manager", join_timeout=30):
        yield mgr


def _ready(client: RESTClient, namespace: str) -> dict[str, Any] | None:
    status = client.get(WEBSITES, "blog", namespace).get("status") or {}
    for cond in status.get("conditions") or []:
        if cond["type"] == "Ready":
            return dict(cond, observedGeneration=status.get("observedGeneration"))
    return None


def test_website_end_to_end(client: RESTClient, namespace: str, manager: Manager) -> None:
    client.create(WEBSITES, {"apiVersion": "example.pyctrl.io/v1", "kind": "Website",
                             "metadata": {"name": "blog"},
                             "spec": {"image": "nginx:1.27", "replicas": 2}}, namespace)

    def children() -> bool:
        try:
            client.get(DEPLOYMENTS, "blog", namespace)
            client.get(SERVICES, "blog", namespace)
        except NotFound:
            return False
        return True

    assert poll(children, 30), "Deployment and Service"
    assert client.get(WEBSITES, "blog", namespace)["metadata"]["finalizers"] == [FINALIZER]
    assert poll(lambda: (_ready(client, namespace) or {}).get("reason") == "Progressing", 30)
    # No kubelet here: play the Deployment controller and report the replicas available.
    client.patch(DEPLOYMENTS, "blog", {"status": {"replicas": 2, "availableReplicas": 2,
                                                  "readyReplicas": 2}},
                 namespace, patch_type="merge", subresource="status")
    assert poll(lambda: (_ready(client, namespace) or {}).get("status") == "True", 30)
    ready = _ready(client, namespace)
    assert ready is not None and ready["observedGeneration"] == 1
    assert ready["message"] == "2/2 replicas available"

    def reasons() -> set[str]:
        return {e.get("reason") for e in client.list(EVENTS, namespace)["items"]}

    assert poll(lambda: "Ready" in reasons(), 30)

    client.delete(WEBSITES, "blog", namespace)

    def gone() -> bool:
        try:
            client.get(WEBSITES, "blog", namespace)
        except NotFound:
            return True
        return False

    assert poll(gone, 30), "the finalizer was not removed"
    assert poll(lambda: "Deleting" in reasons(), 30)
