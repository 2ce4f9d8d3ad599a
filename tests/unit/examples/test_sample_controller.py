"""The sample controller (examples/sample_controller) reconciled against a FakeClient: a Foo's
owned Deployment is created typed, scaled by a merge patch of spec.replicas only, the status
is a patch of what changed; its committed CRD is what ``gen crd`` makes from its types."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import pyctrl
from examples.sample_controller import FOOS, Foo, FooReconciler, FooSpec, setup
from examples.sample_controller.controller import ResourceExistsError
from pyctrl import api
from pyctrl.cli import main
from pyctrl.kube.resource import DEPLOYMENTS
from pyctrl.models.apps_v1 import Deployment, DeploymentStatus
from pyctrl.testing import FakeClient, FakeClock, FakeRecorder, synced_lister

ROOT = Path(__file__).resolve().parents[3]
CRD = ROOT / "examples" / "sample_controller" / "config" / "crd"
REQUEST = pyctrl.Request("ns", "foo")


class Harness:
    """``setup``'s reconciler, its informer-backed listers swapped for listers always in sync
    with the fake (no informer threads) and its recorder for a FakeRecorder."""

    def __init__(self) -> None:
        self.fake = FakeClient()
        self.client = pyctrl.TypedClient(self.fake)
        self.recorder = FakeRecorder()
        self.controller = setup(pyctrl.Manager(self.fake, pyctrl.ManagerOptions(),
                                               clock=FakeClock()))
        reconciler = self.controller.reconciler
        assert isinstance(reconciler, FooReconciler)
        vars(reconciler).update(foos=synced_lister(self.fake, Foo),
                                deployments=synced_lister(self.fake, Deployment),
                                recorder=self.recorder)
        self.reconciler = reconciler

    def create_foo(self, deployment_name: str = "web", replicas: int | None = None) -> Foo:
        return self.client.create(Foo(metadata=api.ObjectMeta(name="foo", namespace="ns"),
                                      spec=FooSpec(deployment_name=deployment_name,
                                                   replicas=replicas)))

    def foo(self) -> Foo:
        return self.client.get(Foo, "foo", "ns")

    def deployment(self) -> Deployment:
        return self.client.get(Deployment, "web", "ns")


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    harness.controller.queue.shut_down()


def test_a_foo_gets_an_owned_nginx_deployment_and_a_status(h: Harness) -> None:
    foo = h.create_foo()
    assert h.reconciler.reconcile(REQUEST) is None
    deployment = h.deployment()
    (ref,) = deployment.metadata.owner_references
    assert (ref.kind, ref.uid, ref.controller) == ("Foo", foo.metadata.uid, True)
    assert deployment.spec.replicas == 1  # spec.replicas unset
    assert deployment.spec.selector.match_labels == {"app": "nginx", "controller": "foo"}
    (container,) = deployment.spec.template.spec.containers
    assert (container.name, container.image) == ("nginx", "nginx:latest")
    # As upstream's non-omitempty int32: 0 is written, not left unset.
    assert api.encode(h.foo().status) == {"availableReplicas": 0}
    assert h.recorder.events == ["Normal Synced Foo synced successfully"]


def test_scaling_patches_only_spec_replicas_and_keeps_undeclared_fields(h: Harness) -> None:
    h.create_foo(replicas=2)
    h.reconciler.reconcile(REQUEST)
    # A field pyctrl.models does not declare (a newer server's): a PUT of the decoded
    # Deployment would drop it.
    h.fake.patch(DEPLOYMENTS, "web", {"spec": {"futureField": "kept"}}, "ns")
    foo = h.foo()
    h.client.update(api.replace(foo, spec=api.replace(foo.spec, replicas=3)))
    h.fake.clear_actions()
    h.reconciler.reconcile(REQUEST)
    writes = [a for a in h.fake.actions if a.verb not in ("get", "list", "watch")]
    assert [(a.verb, a.resource, a.object) for a in writes] == [
        ("patch", DEPLOYMENTS, {"spec": {"replicas": 3}})]
    assert h.deployment().spec.replicas == 3
    assert h.fake.get(DEPLOYMENTS, "web", "ns")["spec"]["futureField"] == "kept"


def test_status_mirrors_available_replicas_and_is_written_only_on_change(h: Harness) -> None:
    h.create_foo(replicas=2)
    h.reconciler.reconcile(REQUEST)
    deployment = h.deployment()
    h.client.patch_status(deployment, api.replace(
        deployment, status=DeploymentStatus(available_replicas=2)))
    h.fake.clear_actions()
    h.reconciler.reconcile(REQUEST)
    (write,) = [a for a in h.fake.actions if a.verb not in ("get", "list", "watch")]
    assert (write.verb, write.resource, write.subresource) == ("patch", FOOS, "status")
    assert write.object["status"] == {"availableReplicas": 2}
    assert write.object["metadata"]["resourceVersion"]  # the lock
    assert h.foo().status.available_replicas == 2
    h.fake.clear_actions()
    h.reconciler.reconcile(REQUEST)
    assert [a for a in h.fake.actions if a.verb not in ("get", "list", "watch")] == []
    assert h.recorder.events.count("Normal Synced Foo synced successfully") == 3


def test_an_empty_deployment_name_is_terminal(h: Harness) -> None:
    h.create_foo(deployment_name="")
    with pytest.raises(pyctrl.TerminalError, match=r"spec\.deploymentName must be specified"):
        h.reconciler.reconcile(REQUEST)
    assert h.client.list(Deployment, "ns") == []


def test_a_foreign_deployment_is_reported_and_retried_not_adopted(h: Harness) -> None:
    labels = {"app": "other"}
    h.fake.create(DEPLOYMENTS, {
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}}}, "ns")
    h.create_foo(replicas=2)
    with pytest.raises(ResourceExistsError, match="'web' already exists"):
        h.reconciler.reconcile(REQUEST)
    assert h.recorder.events == [
        "Warning ErrResourceExists Resource 'web' already exists and is not managed by Foo"]
    deployment = h.deployment()
    assert deployment.spec.replicas == 1 and deployment.metadata.owner_references == []


def test_a_deleted_foo_is_nothing_to_do(h: Harness) -> None:
    assert h.reconciler.reconcile(REQUEST) is None
    assert h.recorder.events == []


def test_the_committed_crd_is_generated_from_the_types() -> None:
    assert main(["gen", "crd", "examples.sample_controller.api", "--out", str(CRD),
                 "--check"]) == 0
