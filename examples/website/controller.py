"""The Website operator: each Website gets a Deployment and a Service, and a Ready condition.

Contract (one reconcile, top to bottom):

* A Website being deleted: its finalizer is removed after a ``Deleting`` event (the
  Deployment and Service it owns are then deleted by the garbage collector).
* Otherwise the finalizer is added first, then the Deployment (``spec.replicas`` pods of
  ``spec.image`` listening on ``spec.port``) and the Service (port 80 to ``spec.port``) are
  server-side applied, both controlled by the Website.
* Status: ``observedGeneration`` and a ``Ready`` condition, True once the Deployment reports
  ``spec.replicas`` available replicas (reason ``Available``), else False
  (``Progressing``); written only when it changed, with a ``Ready``/``NotReady`` event when
  Ready flips.

``setup(manager)`` wires it with the Builder; ``python -m pyctrl gen rbac
examples.website:setup`` derives its RBAC from that (the finalizer patch is declared with
``builder.rbac``, the only write the declarations cannot show).
"""

from __future__ import annotations

import copy
from typing import Any, Protocol

import pyctrl
from examples.website.api import WEBSITES, Website
from pyctrl import api, rbac

__all__ = ["FIELD_MANAGER", "FINALIZER", "WebsiteReconciler", "desired_deployment",
           "desired_service", "setup"]

FINALIZER = "example.pyctrl.io/cleanup"
FIELD_MANAGER = "website-controller"


def _labels(site: pyctrl.Object) -> dict[str, str]:
    return {"app.kubernetes.io/name": "website", "app.kubernetes.io/instance":
            site["metadata"]["name"]}


def desired_deployment(site: pyctrl.Object, spec: Any) -> pyctrl.Object:
    """The Deployment a Website wants (``spec`` is its typed WebsiteSpec)."""
    labels = _labels(site)
    deployment: pyctrl.Object = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": site["metadata"]["name"],
                     "namespace": site["metadata"]["namespace"], "labels": labels},
        "spec": {"replicas": spec.replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [{
                     "name": "web", "image": spec.image,
                     "ports": [{"name": "http", "containerPort": spec.port}]}]}}},
    }
    pyctrl.set_controller_reference(site, deployment)
    return deployment


def desired_service(site: pyctrl.Object, spec: Any) -> pyctrl.Object:
    """The Service in front of the Website's pods: port 80 to ``spec.port``."""
    service: pyctrl.Object = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": site["metadata"]["name"],
                     "namespace": site["metadata"]["namespace"], "labels": _labels(site)},
        "spec": {"selector": _labels(site),
                 "ports": [{"name": "http", "port": 80, "targetPort": spec.port}]},
    }
    pyctrl.set_controller_reference(site, service)
    return service


class WebsiteLister(Protocol):
    """Where the reconciler reads Websites: the Builder's lister (the informer cache)."""

    def get(self, namespace: str | None, name: str) -> pyctrl.Object: ...


class WebsiteReconciler:
    """Drives one Website's Deployment, Service and status (see module docstring)."""

    def __init__(self, client: pyctrl.Client, websites: WebsiteLister,
                 recorder: pyctrl.EventRecorder, clock: pyctrl.Clock) -> None:
        self.client = client
        self.websites = websites
        self.recorder = recorder
        self.clock = clock

    def reconcile(self, request: pyctrl.Request) -> pyctrl.Result | None:
        try:
            site = self.websites.get(request.namespace, request.name)
        except pyctrl.NotFound:
            return None  # deleted and gone: nothing left to do
        if site["metadata"].get("deletionTimestamp"):
            if pyctrl.has_finalizer(site, FINALIZER):
                self.recorder.event(site, "Normal", "Deleting",
                                    "Website deleted: its Deployment and Service go with it")
                pyctrl.remove_finalizer(self.client, WEBSITES, site, FINALIZER)
            return None
        site = pyctrl.add_finalizer(self.client, WEBSITES, site, FINALIZER)
        spec = api.decode(Website, site).spec
        deployment = pyctrl.apply(self.client, pyctrl.DEPLOYMENTS,
                                  desired_deployment(site, spec), FIELD_MANAGER, force=True)
        pyctrl.apply(self.client, pyctrl.SERVICES, desired_service(site, spec), FIELD_MANAGER,
                     force=True)
        self._update_status(site, spec.replicas, deployment)
        return None

    def _update_status(self, site: pyctrl.Object, replicas: int,
                       deployment: pyctrl.Object) -> None:
        available = int((deployment.get("status") or {}).get("availableReplicas") or 0)
        ready = available >= replicas
        generation = site["metadata"].get("generation")
        status = site.get("status") or {}
        conditions = copy.deepcopy(status.get("conditions") or [])  # never the cache's list
        was_ready = pyctrl.is_status_condition_true(conditions, "Ready")
        changed = pyctrl.set_status_condition(conditions, {
            "type": "Ready", "status": "True" if ready else "False",
            "reason": "Available" if ready else "Progressing",
            "message": f"{available}/{replicas} replicas available",
            "observedGeneration": generation}, clock=self.clock)
        if not changed and status.get("observedGeneration") == generation:
            return
        self.client.patch(WEBSITES, site["metadata"]["name"], {"status": {
            "conditions": conditions, "observedGeneration": generation}},
            site["metadata"]["namespace"], patch_type="merge", subresource="status")
        if ready != was_ready:
            self.recorder.event(site, "Normal", "Ready" if ready else "NotReady",
                                f"{available}/{replicas} replicas available")


def setup(manager: pyctrl.Manager, *, workers: int = 2) -> pyctrl.Controller[pyctrl.Request]:
    """Wire the Website controller: Websites, and the Deployments and Services they own."""
    builder = manager.controller("website", workers=workers).for_(WEBSITES)
    # Server-side apply creates or patches; the garbage collector does the deletes.
    builder.owns(pyctrl.DEPLOYMENTS, writes=("create", "patch"))
    builder.owns(pyctrl.SERVICES, writes=("create", "patch"))
    builder.rbac(rbac.PolicyRule.of(WEBSITES, "patch", reason="adds and removes its finalizer"))
    reconciler = WebsiteReconciler(manager.client_for_leader(), builder.lister_for(WEBSITES),
                                   manager.event_recorder("website-controller"), manager.clock)
    return builder.complete(reconciler)
