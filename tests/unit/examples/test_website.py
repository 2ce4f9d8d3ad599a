"""The Website operator (examples/website), reconciled against a FakeClient with a FakeClock;
its committed CRD and RBAC are what the generators make from its code."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from examples.website import FINALIZER, WEBSITES, WebsiteReconciler
from pyctrl import DEPLOYMENTS, SERVICES, Object, Request
from pyctrl.cache import Indexer, Lister
from pyctrl.cli import main
from pyctrl.testing import FakeClient, FakeClock, FakeRecorder

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "examples" / "website" / "config"
START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
REQUEST = Request("web", "blog")


class Harness:
    """The reconciler on a FakeClient; the lister's cache is refreshed before each pass."""

    def __init__(self) -> None:
        self.clock = FakeClock(START)
        self.client = FakeClient(self.clock)
        self.recorder = FakeRecorder()
        self.indexer = Indexer()
        self.reconciler = WebsiteReconciler(self.client, Lister(self.indexer, WEBSITES),
                                            self.recorder, self.clock)

    def reconcile(self) -> None:
        self.indexer.replace(self.client.list(WEBSITES, "web")["items"])
        assert self.reconciler.reconcile(REQUEST) is None

    def site(self) -> Object:
        return self.client.get(WEBSITES, "blog", "web")

    def ready(self) -> Object:
        (cond,) = [c for c in self.site()["status"]["conditions"] if c["type"] == "Ready"]
        assert isinstance(cond, dict)
        return cond


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.client.create(WEBSITES, {
        "apiVersion": "example.pyctrl.io/v1", "kind": "Website",
        "metadata": {"name": "blog", "namespace": "web"},
        "spec": {"image": "nginx:1.27", "replicas": 2, "port": 8080}}, "web")
    return harness


def test_a_website_gets_an_owned_deployment_and_service_and_a_finalizer(h: Harness) -> None:
    h.reconcile()
    site = h.site()
    assert site["metadata"]["finalizers"] == [FINALIZER]
    deployment = h.client.get(DEPLOYMENTS, "blog", "web")
    service = h.client.get(SERVICES, "blog", "web")
    for child in (deployment, service):
        (ref,) = child["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("Website", "blog", True)
    assert deployment["spec"]["replicas"] == 2
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "nginx:1.27"
    assert container["ports"] == [{"name": "http", "containerPort": 8080}]
    assert service["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": 8080}]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    ready = h.ready()
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False", "Progressing", "0/2 replicas available")
    assert site["status"]["observedGeneration"] == 1
    assert h.recorder.events == []  # not Ready before, not Ready now: no event


def test_ready_once_the_deployment_has_its_replicas_available(h: Harness) -> None:
    h.reconcile()
    h.clock.step(30)
    deployment = h.client.get(DEPLOYMENTS, "blog", "web")
    h.client.patch(DEPLOYMENTS, "blog", {"status": {"availableReplicas": 2}}, "web",
                   patch_type="merge", subresource="status")
    del deployment
    h.reconcile()
    ready = h.ready()
    assert (ready["status"], ready["reason"]) == ("True", "Available")
    assert ready["lastTransitionTime"] == "2026-01-01T12:00:30Z"  # the FakeClock's time
    assert h.recorder.events == ["Normal Ready 2/2 replicas available"]
    # Nothing changed: no status write, no event.
    writes = len(h.client.actions)
    h.reconcile()
    assert [a for a in h.client.actions[writes:] if a.subresource == "status"] == []
    assert len(h.recorder.events) == 1


def test_a_spec_change_is_applied_and_observed(h: Harness) -> None:
    h.reconcile()
    site = h.site()
    site["spec"]["replicas"] = 3
    h.client.update(WEBSITES, site, "web")
    h.reconcile()
    assert h.client.get(DEPLOYMENTS, "blog", "web")["spec"]["replicas"] == 3
    assert h.site()["status"]["observedGeneration"] == 2
    assert h.ready()["message"] == "0/3 replicas available"


def test_delete_removes_the_finalizer_and_the_website_goes(h: Harness) -> None:
    h.reconcile()
    h.client.delete(WEBSITES, "blog", "web")
    assert h.site()["metadata"]["deletionTimestamp"]  # held by the finalizer
    h.reconcile()
    assert h.client.list(WEBSITES, "web")["items"] == []
    assert h.recorder.events[-1].startswith("Normal Deleting ")
    h.reconcile()  # gone: nothing to do


def test_the_committed_crd_is_generated_from_the_types() -> None:
    assert main(["gen", "crd", "examples.website.api", "--out", str(CONFIG / "crd"),
                 "--check"]) == 0


def test_the_committed_rbac_is_generated_from_the_builder() -> None:
    assert main(["gen", "rbac", "examples.website:setup", "--name", "website-operator",
                 "--check", str(CONFIG / "rbac.yaml")]) == 0
