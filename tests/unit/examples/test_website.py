"""The Website operator (examples/website), reconciled against a FakeClient with a FakeClock;
its committed CRD and RBAC are what the generators make from its code."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

import pyctrl
from examples.website import FINALIZER, Website, WebsiteReconciler, WebsiteSpec
from pyctrl import api
from pyctrl.cli import main
from pyctrl.models.apps_v1 import Deployment, DeploymentStatus
from pyctrl.models.core_v1 import Service
from pyctrl.testing import FakeClient, FakeClock, FakeRecorder, synced_lister

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "examples" / "website" / "config"
START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
REQUEST = pyctrl.Request("web", "blog")


class Harness:
    """The reconciler on a FakeClient, reading Websites through a lister always in sync."""

    def __init__(self) -> None:
        self.clock = FakeClock(START)
        self.fake = FakeClient(self.clock)
        self.client = pyctrl.TypedClient(self.fake)
        self.recorder = FakeRecorder()
        self.reconciler = pyctrl.with_object(
            synced_lister(self.fake, Website),
            WebsiteReconciler(self.client, self.recorder, self.clock))

    def reconcile(self) -> None:
        assert self.reconciler.reconcile(REQUEST) is None

    def site(self) -> Website:
        return self.client.get(Website, "blog", "web")

    def ready(self) -> api.Condition:
        ready = pyctrl.find_status_condition(self.site().status.conditions, "Ready")
        assert ready is not None
        return ready


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.client.create(Website(
        metadata=api.ObjectMeta(name="blog", namespace="web"),
        spec=WebsiteSpec(image="nginx:1.27", replicas=2, port=8080)))
    return harness


def test_a_website_gets_an_owned_deployment_and_service_and_a_finalizer(h: Harness) -> None:
    h.reconcile()
    site = h.site()
    assert site.metadata.finalizers == [FINALIZER]
    deployment = h.client.get(Deployment, "blog", "web")
    service = h.client.get(Service, "blog", "web")
    for child in (deployment, service):
        (ref,) = child.metadata.owner_references
        assert (ref.kind, ref.name, ref.controller) == ("Website", "blog", True)
    assert deployment.spec.replicas == 2
    (container,) = deployment.spec.template.spec.containers
    assert container.image == "nginx:1.27"
    assert api.encode(container)["ports"] == [{"name": "http", "containerPort": 8080}]
    assert api.encode(service.spec)["ports"] == [{"name": "http", "port": 80,
                                                  "targetPort": 8080}]
    assert service.spec.selector == deployment.spec.selector.match_labels
    ready = h.ready()
    assert (ready.status, ready.reason, ready.message) == (
        "False", "Progressing", "0/2 replicas available")
    assert site.status.observed_generation == 1 and ready.observed_generation == 1
    assert h.recorder.events == []  # not Ready before, not Ready now: no event


def test_ready_once_the_deployment_has_its_replicas_available(h: Harness) -> None:
    h.reconcile()
    h.clock.step(30)
    deployment = h.client.get(Deployment, "blog", "web")
    h.client.patch_status(deployment, api.replace(
        deployment, status=DeploymentStatus(available_replicas=2)))
    h.reconcile()
    ready = h.ready()
    assert (ready.status, ready.reason) == ("True", "Available")
    assert ready.last_transition_time == datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC)
    assert h.recorder.events == ["Normal Ready 2/2 replicas available"]
    # Nothing changed: no status write, no event.
    writes = len(h.fake.actions)
    h.reconcile()
    assert [a for a in h.fake.actions[writes:] if a.subresource == "status"] == []
    assert len(h.recorder.events) == 1


def test_the_status_write_sends_only_what_changed_with_the_resource_version(
        h: Harness) -> None:
    h.reconcile()
    site = h.site()
    h.client.update(api.replace(site, spec=api.replace(site.spec, replicas=3)))
    h.fake.clear_actions()
    h.reconcile()
    (write,) = [a for a in h.fake.actions if a.subresource == "status"]
    status = write.object["status"]
    assert status["observedGeneration"] == 2
    assert status["conditions"][0]["message"] == "0/3 replicas available"
    assert write.object["metadata"]["resourceVersion"]  # the lock


def test_a_spec_change_is_applied_and_observed(h: Harness) -> None:
    h.reconcile()
    site = h.site()
    h.client.update(api.replace(site, spec=api.replace(site.spec, replicas=3)))
    h.reconcile()
    deployment = h.client.get(Deployment, "blog", "web")
    assert deployment.spec.replicas == 3
    assert h.site().status.observed_generation == 2
    assert h.ready().message == "0/3 replicas available"


def test_delete_removes_the_finalizer_and_the_website_goes(h: Harness) -> None:
    h.reconcile()
    h.client.delete(Website, "blog", "web")
    assert h.site().metadata.deletion_timestamp is not None  # held by the finalizer
    h.reconcile()
    assert h.client.list(Website, "web") == []
    assert h.recorder.events[-1].startswith("Normal Deleting ")
    h.reconcile()  # gone: nothing to do


def test_a_child_another_controller_owns_is_refused(h: Harness) -> None:
    h.reconcile()
    other = h.client.create(Website(metadata=api.ObjectMeta(name="other", namespace="web"),
                                    spec=WebsiteSpec(image="nginx")))
    deployment = h.client.get(Deployment, "blog", "web")
    with pytest.raises(pyctrl.AlreadyOwned, match="already controlled by Website 'blog'"):
        pyctrl.set_controller_reference(other, deployment)


def test_the_committed_crd_is_generated_from_the_types() -> None:
    assert main(["gen", "crd", "examples.website.api", "--out", str(CONFIG / "crd"),
                 "--check"]) == 0


def test_the_committed_rbac_is_generated_from_the_builder() -> None:
    assert main(["gen", "rbac", "examples.website:setup", "--name", "website-operator",
                 "--check", str(CONFIG / "rbac.yaml")]) == 0
