"""The Website operator of docs/TUTORIAL.md ("Your first operator").

A ``Website`` (``example.pyctrl.io/v1``, declared in :mod:`examples.website.api`) gets a
Deployment and a Service it owns, a finalizer, events and a ``Ready`` condition with
``observedGeneration`` (:mod:`examples.website.controller`). Its CRD and RBAC under
``config/`` are generated from the code and checked by the tests.
"""

from examples.website.api import WEBSITES, Website, WebsiteSpec, WebsiteStatus
from examples.website.controller import FINALIZER, WebsiteReconciler, setup

__all__ = ["FINALIZER", "WEBSITES", "Website", "WebsiteReconciler", "WebsiteSpec",
           "WebsiteStatus", "setup"]
