"""sample-controller in pyctrl: a Foo (samplecontroller.pyctrl.io/v1alpha1) owns a Deployment.

Contract, as in kubernetes/sample-controller:

* For each Foo, a Deployment named ``spec.deploymentName`` exists in the Foo's namespace,
  controlled by the Foo (ownerReference controller=true), running ``spec.replicas`` nginx pods.
* If a Deployment of that name exists but is not controlled by the Foo, the Foo gets a Warning
  event ``ErrResourceExists`` and the key is retried with backoff (someone may delete it).
* ``status.availableReplicas`` mirrors the Deployment's; a Normal ``Synced`` event follows
  every successful sync. Deleting a Foo leaves the Deployment to the garbage collector.
* Reads come from listers (the informer cache); cached objects are copied before changes.
* Wiring is one Builder chain (:func:`setup`); the reconciler receives a ``pyctrl.Request``.
* Writes (the Deployment, the Foo's status) and events go through
  ``manager.client_for_leader()``: with leader election, a replica that lost its lease writes
  nothing (NotLeader); without it, that is the manager's client.
"""

from __future__ import annotations

import copy
from typing import Any

from pyctrl import (
    DEPLOYMENTS,
    Client,
    Controller,
    EventRecorder,
    Lister,
    Manager,
    NotFound,
    Object,
    Request,
    Resource,
    Result,
    TerminalError,
    get_logger,
    is_controlled_by,
    set_controller_reference,
)

__all__ = ["FOOS", "FooReconciler", "ResourceExistsError", "new_deployment", "setup"]

log = get_logger(__name__)

FOOS = Resource("samplecontroller.pyctrl.io", "v1alpha1", "foos", "Foo")
AGENT = "sample-controller"
SUCCESS_SYNCED = "Synced"
ERR_RESOURCE_EXISTS = "ErrResourceExists"
MESSAGE_RESOURCE_EXISTS = "Resource %r already exists and is not managed by Foo"
MESSAGE_RESOURCE_SYNCED = "Foo synced successfully"


class ResourceExistsError(Exception):
    """The Deployment name is taken by an object this Foo does not control."""


def new_deployment(foo: Object) -> Object:
    """The Deployment a Foo wants: nginx pods labelled with the Foo's name."""
    md, spec = foo["metadata"], foo.get("spec") or {}
    labels = {"app": "nginx", "controller": md["name"]}
    deployment: Object = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": spec["deploymentName"], "namespace": md["namespace"]},
        "spec": {
            "replicas": spec.get("replicas", 1),
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]},
            },
        },
    }
    set_controller_reference(foo, deployment)
    return deployment


class FooReconciler:
    """Drives one Foo's Deployment and status towards its spec."""

    def __init__(self, client: Client, foos: Lister, deployments: Lister,
                 recorder: EventRecorder) -> None:
        self.client = client
        self.foos = foos
        self.deployments = deployments
        self.recorder = recorder

    def reconcile(self, request: Request) -> Result | None:
        namespace, name = request
        try:
            foo = self.foos.get(namespace, name)
        except NotFound:
            log.info("foo no longer exists")
            return None
        spec: dict[str, Any] = foo.get("spec") or {}
        deployment_name = spec.get("deploymentName")
        if not deployment_name:
            raise TerminalError(f"{request.key}: spec.deploymentName must be specified")
        try:
            deployment = self.deployments.get(namespace, deployment_name)
        except NotFound:
            deployment = self.client.create(DEPLOYMENTS, new_deployment(foo), namespace)
            log.info("created deployment", deployment=deployment_name)
        if not is_controlled_by(deployment, foo):
            message = MESSAGE_RESOURCE_EXISTS % deployment_name
            self.recorder.event(foo, "Warning", ERR_RESOURCE_EXISTS, message)
            raise ResourceExistsError(message)
        replicas = spec.get("replicas")
        if replicas is not None and (deployment.get("spec") or {}).get("replicas") != replicas:
            updated = copy.deepcopy(deployment)
            updated["spec"]["replicas"] = replicas
            deployment = self.client.update(DEPLOYMENTS, updated, namespace)
            log.info("scaled deployment", deployment=deployment_name, replicas=replicas)
        self._update_status(foo, deployment)
        self.recorder.event(foo, "Normal", SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED)
        return None

    def _update_status(self, foo: Object, deployment: Object) -> None:
        available = (deployment.get("status") or {}).get("availableReplicas", 0)
        if (foo.get("status") or {}).get("availableReplicas") == available:
            return
        updated = copy.deepcopy(foo)
        updated["status"] = {"availableReplicas": available}
        self.client.update_status(FOOS, updated, foo["metadata"]["namespace"])


def setup(manager: Manager, *, workers: int = 2) -> Controller[Request]:
    """Wire the Foo controller into ``manager``: Foos and the Deployments they own."""
    lister = manager.informers.lister_for
    reconciler = FooReconciler(manager.client_for_leader(), lister(FOOS), lister(DEPLOYMENTS),
                               manager.event_recorder(AGENT))
    return (manager.controller("foo", workers=workers).for_(FOOS).owns(DEPLOYMENTS)
            .complete(reconciler))
