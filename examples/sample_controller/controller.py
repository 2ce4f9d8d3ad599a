"""sample-controller in pyctrl: a Foo (samplecontroller.pyctrl.io/v1alpha1) owns a Deployment.

Contract, as in kubernetes/sample-controller:

* For each Foo, a Deployment named ``spec.deploymentName`` exists in the Foo's namespace,
  controlled by the Foo (ownerReference controller=true), running ``spec.replicas`` nginx pods
  (1 when unset). An empty ``spec.deploymentName`` is a TerminalError (no retry).
* If a Deployment of that name exists but is not controlled by the Foo, the Foo gets a Warning
  event ``ErrResourceExists`` and the key is retried with backoff (someone may delete it).
* ``status.availableReplicas`` mirrors the Deployment's; a Normal ``Synced`` event follows
  every successful sync. Deleting a Foo leaves the Deployment to the garbage collector.
* Typed throughout: the Foo (:mod:`examples.sample_controller.api`) and the Deployment
  (:mod:`pyctrl.models`) are read from the Builder's typed caches, immutable, never copied.
* Writes touch only what the controller owns: the Deployment is created whole, scaled with a
  merge patch of ``spec.replicas`` (never a PUT of a decoded object, which would drop fields
  the model does not declare), and the status is written with
  :meth:`pyctrl.TypedClient.patch_status` (only the changed fields, the resourceVersion as a
  lock; nothing when nothing changed).
* Writes and events go through ``manager.client_for_leader()``: with leader election, a
  replica that lost its lease writes nothing (NotLeader); without it, that is the manager's
  client.
"""

from __future__ import annotations

from examples.sample_controller.api import Foo, FooStatus
from pyctrl import (
    Builder,
    Controller,
    Manager,
    NotFound,
    Request,
    Result,
    TerminalError,
    TypedClient,
    api,
    get_logger,
    is_controlled_by,
    set_controller_reference,
)
from pyctrl.models.apps_v1 import Deployment, DeploymentSpec
from pyctrl.models.core_v1 import Container, PodSpec, PodTemplateSpec
from pyctrl.models.meta_v1 import LabelSelector

__all__ = ["AGENT", "FooReconciler", "ResourceExistsError", "new_deployment", "setup"]

log = get_logger(__name__)

AGENT = "sample-controller"
SUCCESS_SYNCED = "Synced"
ERR_RESOURCE_EXISTS = "ErrResourceExists"
MESSAGE_RESOURCE_EXISTS = "Resource %r already exists and is not managed by Foo"
MESSAGE_RESOURCE_SYNCED = "Foo synced successfully"


class ResourceExistsError(Exception):
    """The Deployment name is taken by an object this Foo does not control."""


def new_deployment(foo: Foo) -> Deployment:
    """The Deployment a Foo wants: nginx pods labelled with the Foo's name."""
    labels = {"app": "nginx", "controller": foo.metadata.name}
    replicas = foo.spec.replicas if foo.spec.replicas is not None else 1
    deployment = Deployment(
        metadata=api.ObjectMeta(name=foo.spec.deployment_name,
                                namespace=foo.metadata.namespace),
        spec=DeploymentSpec(
            replicas=replicas, selector=LabelSelector(match_labels=labels),
            template=PodTemplateSpec(metadata=api.ObjectMeta(labels=labels), spec=PodSpec(
                containers=[Container(name="nginx", image="nginx:latest")]))))
    return set_controller_reference(foo, deployment)


def _same(field: str, old: object, new: object) -> bool:
    """Status equality without "unset equals 0": a new Foo's ``availableReplicas: 0`` is
    written, as upstream's (a non-omitempty int32) is."""
    del field
    return old == new


class FooReconciler:
    """Drives one Foo's Deployment and status towards its spec."""

    def __init__(self, manager: Manager, builder: Builder) -> None:
        self.client = TypedClient(manager.client_for_leader())
        self.foos = builder.lister_for(Foo)
        self.deployments = builder.lister_for(Deployment)
        self.recorder = manager.event_recorder(AGENT)

    def reconcile(self, request: Request) -> Result | None:
        namespace, name = request
        try:
            foo = self.foos.get(namespace, name)
        except NotFound:
            log.info("foo no longer exists")
            return None
        deployment_name = foo.spec.deployment_name
        if not deployment_name:
            raise TerminalError(f"{request.key}: spec.deploymentName must be specified")
        try:
            deployment = self.deployments.get(namespace, deployment_name)
        except NotFound:
            deployment = self.client.create(new_deployment(foo))
            log.info("created deployment", deployment=deployment_name)
        if not is_controlled_by(deployment, foo):
            message = MESSAGE_RESOURCE_EXISTS % deployment_name
            self.recorder.event(foo, "Warning", ERR_RESOURCE_EXISTS, message)
            raise ResourceExistsError(message)
        replicas = foo.spec.replicas
        if replicas is not None and deployment.spec.replicas != replicas:
            deployment = self.client.patch(Deployment, deployment_name,
                                           {"spec": {"replicas": replicas}}, namespace)
            log.info("scaled deployment", deployment=deployment_name, replicas=replicas)
        available = deployment.status.available_replicas or 0
        self.client.patch_status(foo, api.replace(
            foo, status=FooStatus(available_replicas=available)), equal=_same)
        self.recorder.event(foo, "Normal", SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED)
        return None


def setup(manager: Manager, *, workers: int = 2) -> Controller[Request]:
    """Wire the Foo controller into ``manager``: Foos and the Deployments they own (created,
    then scaled by patch; the garbage collector deletes them)."""
    builder = (manager.controller("foo", workers=workers)
               .for_(Foo).owns(Deployment, writes=("create", "patch")))
    return builder.complete(FooReconciler(manager, builder))
