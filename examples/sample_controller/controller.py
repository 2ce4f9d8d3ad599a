"""sample-controller in pyctrl: a Foo (samplecontroller.pyctrl.io/v1alpha1) owns a Deployment.

Contract, as in kubernetes/sample-controller:

* For each Foo, a Deployment named ``spec.deploymentName`` exists in the Foo's namespace,
  controlled by the Foo (ownerReference controller=true), running ``spec.replicas`` nginx pods.
* If a Deployment of that name exists but is not controlled by the Foo, the Foo gets a Warning
  event ``ErrResourceExists`` and the key is retried with backoff (someone may delete it).
* ``status.availableReplicas`` mirrors the Deployment's; a Normal ``Synced`` event follows
  every successful sync. Deleting a Foo leaves the Deployment to the garbage collector.
* Reads come from listers (the informer cache); cached objects are copied before changes.
"""

from __future__ import annotations

import copy
from typing import Any

import structlog

from pyctrl.cache import Lister, split_meta_namespace_key
from pyctrl.controller import Controller, Result
from pyctrl.errors import NotFound, TerminalError
from pyctrl.handlers import enqueue_object, enqueue_owner
from pyctrl.kube import DEPLOYMENTS, Client, Object, Resource
from pyctrl.manager import Manager
from pyctrl.record import EventRecorder

__all__ = ["FOOS", "FooReconciler", "ResourceExistsError", "new_deployment", "setup"]

log = structlog.get_logger(__name__)

FOOS = Resource("samplecontroller.pyctrl.io", "v1alpha1", "foos", "Foo")
AGENT = "sample-controller"
SUCCESS_SYNCED = "Synced"
ERR_RESOURCE_EXISTS = "ErrResourceExists"
MESSAGE_RESOURCE_EXISTS = "Resource %r already exists and is not managed by Foo"
MESSAGE_RESOURCE_SYNCED = "Foo synced successfully"


class ResourceExistsError(Exception):
    """The Deployment name is taken by an object this Foo does not control."""


def _typed(obj: Object) -> Object:
    # Listed objects may lack apiVersion/kind; events and owner refs need them.
    return {**obj, "apiVersion": FOOS.api_version, "kind": FOOS.kind}


def is_controlled_by(obj: Object, owner: Object) -> bool:
    uid = owner["metadata"].get("uid")
    return any(
        ref.get("controller") and ref.get("uid") == uid
        for ref in obj["metadata"].get("ownerReferences") or []
    )


def new_deployment(foo: Object) -> Object:
    """The Deployment a Foo wants: nginx pods labelled with the Foo's name."""
    md, spec = foo["metadata"], foo.get("spec") or {}
    labels = {"app": "nginx", "controller": md["name"]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": spec["deploymentName"],
            "namespace": md["namespace"],
            "ownerReferences": [{
                "apiVersion": FOOS.api_version, "kind": FOOS.kind, "name": md["name"],
                "uid": md["uid"], "controller": True, "blockOwnerDeletion": True,
            }],
        },
        "spec": {
            "replicas": spec.get("replicas", 1),
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]},
            },
        },
    }


class FooReconciler:
    """Drives one Foo's Deployment and status towards its spec."""

    def __init__(self, client: Client, foos: Lister, deployments: Lister,
                 recorder: EventRecorder) -> None:
        self.client = client
        self.foos = foos
        self.deployments = deployments
        self.recorder = recorder

    def reconcile(self, key: str) -> Result | None:
        namespace, name = split_meta_namespace_key(key)
        try:
            foo = _typed(self.foos.get(namespace, name))
        except NotFound:
            log.info("foo no longer exists")
            return None
        spec: dict[str, Any] = foo.get("spec") or {}
        deployment_name = spec.get("deploymentName")
        if not deployment_name:
            raise TerminalError(f"{key}: spec.deploymentName must be specified")
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


def setup(manager: Manager, *, workers: int = 2) -> Controller:
    """Wire the Foo controller into ``manager`` (informers, handlers, events)."""
    foo_informer = manager.informers.informer_for(FOOS)
    deployment_informer = manager.informers.informer_for(DEPLOYMENTS)
    reconciler = FooReconciler(
        manager.client,
        manager.informers.lister_for(FOOS),
        manager.informers.lister_for(DEPLOYMENTS),
        manager.event_recorder(AGENT),
    )
    controller = Controller("foo", reconciler, workers=workers, registry=manager.registry,
                            clock=manager.clock)
    foo_informer.add_event_handler(enqueue_object(controller.queue))
    deployment_informer.add_event_handler(enqueue_owner(controller.queue, FOOS.group, FOOS.kind))
    manager.add_controller(controller)
    return controller
