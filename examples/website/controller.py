"""The Website operator: each Website gets a Deployment and a Service, and a Ready condition.

Contract (one reconcile, top to bottom; the Website comes typed from the informer cache):

* A Website being deleted: its finalizer is removed after a ``Deleting`` event (the
  Deployment and Service it owns are then deleted by the garbage collector).
* Otherwise the finalizer is added first, then the Deployment (``spec.replicas`` pods of
  ``spec.image`` listening on ``spec.port``) and the Service (port 80 to ``spec.port``) are
  server-side applied, both controlled by the Website.
* Status: ``observedGeneration`` and a ``Ready`` condition, True once the Deployment reports
  ``spec.replicas`` available replicas (reason ``Available``), else False
  (``Progressing``); only the changed fields are written, none when nothing changed, with a
  ``Ready``/``NotReady`` event when Ready flips.

``setup(manager)`` wires it with the Builder; ``python -m pyctrl gen rbac
examples.website:setup`` derives its RBAC from that (the finalizer patch is declared with
``builder.rbac``, the only write the declarations cannot show).
"""

from __future__ import annotations

import pyctrl
from examples.website.api import WEBSITES, Website
from pyctrl import api, rbac
from pyctrl.models.apps_v1 import Deployment, DeploymentSpec
from pyctrl.models.core_v1 import (
    Container,
    ContainerPort,
    PodSpec,
    PodTemplateSpec,
    Service,
    ServicePort,
    ServiceSpec,
)
from pyctrl.models.meta_v1 import LabelSelector

__all__ = ["FIELD_MANAGER", "FINALIZER", "WebsiteReconciler", "desired_deployment",
           "desired_service", "setup"]

FINALIZER = "example.pyctrl.io/cleanup"
FIELD_MANAGER = "website-controller"


def _labels(site: Website) -> dict[str, str]:
    return {"app.kubernetes.io/name": "website",
            "app.kubernetes.io/instance": site.metadata.name}


def _meta(site: Website) -> api.ObjectMeta:
    return api.ObjectMeta(name=site.metadata.name, namespace=site.metadata.namespace,
                          labels=_labels(site))


def desired_deployment(site: Website) -> Deployment:
    """The Deployment a Website wants, controlled by it."""
    labels = _labels(site)
    container = Container(name="web", image=site.spec.image, ports=[
        ContainerPort(name="http", container_port=site.spec.port)])
    deployment = Deployment(metadata=_meta(site), spec=DeploymentSpec(
        replicas=site.spec.replicas, selector=LabelSelector(match_labels=labels),
        template=PodTemplateSpec(metadata=api.ObjectMeta(labels=labels),
                                 spec=PodSpec(containers=[container]))))
    return pyctrl.set_controller_reference(site, deployment)


def desired_service(site: Website) -> Service:
    """The Service in front of the Website's pods: port 80 to ``spec.port``."""
    service = Service(metadata=_meta(site), spec=ServiceSpec(selector=_labels(site), ports=[
        ServicePort(name="http", port=80, target_port=site.spec.port)]))
    return pyctrl.set_controller_reference(site, service)


class WebsiteReconciler:
    """Drives one Website's Deployment, Service and status (see module docstring)."""

    def __init__(self, client: pyctrl.TypedClient, recorder: pyctrl.EventRecorder,
                 clock: pyctrl.Clock) -> None:
        self.client = client
        self.recorder = recorder
        self.clock = clock

    def reconcile(self, request: pyctrl.Request, site: Website) -> pyctrl.Result | None:
        if site.metadata.deletion_timestamp is not None:
            if pyctrl.has_finalizer(site, FINALIZER):
                self.recorder.event(site, "Normal", "Deleting",
                                    "Website deleted: its Deployment and Service go with it")
                self.client.remove_finalizer(site, FINALIZER)
            return None
        site = self.client.add_finalizer(site, FINALIZER)
        deployment = self.client.apply(desired_deployment(site), FIELD_MANAGER, force=True)
        self.client.apply(desired_service(site), FIELD_MANAGER, force=True)
        self._update_status(site, deployment)
        return None

    def _update_status(self, site: Website, deployment: Deployment) -> None:
        replicas = site.spec.replicas
        available = deployment.status.available_replicas or 0
        ready = available >= replicas
        message = f"{available}/{replicas} replicas available"
        conditions = pyctrl.set_status_condition(
            site.status.conditions, "Ready", "True" if ready else "False",
            "Available" if ready else "Progressing", message,
            observed_generation=site.metadata.generation, clock=self.clock)
        status = api.replace(site.status, conditions=conditions,
                             observed_generation=site.metadata.generation)
        # Sends only what changed (nothing at all when nothing did), with the
        # resourceVersion as a lock: a 409 retries from the newer cached Website.
        self.client.patch_status(site, api.replace(site, status=status))
        if ready != pyctrl.is_status_condition_true(site.status.conditions, "Ready"):
            self.recorder.event(site, "Normal", "Ready" if ready else "NotReady", message)


def setup(manager: pyctrl.Manager, *, workers: int = 2) -> pyctrl.Controller[pyctrl.Request]:
    """Wire the Website controller: Websites, and the Deployments and Services they own."""
    builder = manager.controller("website", workers=workers).for_(Website)
    # Server-side apply creates or patches; the garbage collector does the deletes.
    builder.owns(Deployment, writes=("create", "patch"))
    builder.owns(Service, writes=("create", "patch"))
    builder.rbac(rbac.PolicyRule.of(WEBSITES, "patch", reason="adds and removes its finalizer"))
    reconciler = WebsiteReconciler(pyctrl.TypedClient(manager.client_for_leader()),
                                   manager.event_recorder("website-controller"), manager.clock)
    # The reconciler gets each Website typed, from the cache, with its Request.
    return builder.complete(pyctrl.with_object(builder.lister_for(Website), reconciler))
