"""A port of kubernetes/sample-controller: each Foo owns a Deployment (see controller.py).

The Foo kind is declared in :mod:`examples.sample_controller.api`; its CRD under
``config/crd`` is generated from it and checked by the tests.
"""

from examples.sample_controller.api import FOOS, Foo, FooSpec, FooStatus
from examples.sample_controller.controller import FooReconciler, setup

__all__ = ["FOOS", "Foo", "FooReconciler", "FooSpec", "FooStatus", "setup"]
