"""A port of kubernetes/sample-controller: each Foo owns a Deployment (see controller.py)."""

from examples.sample_controller.controller import FOOS, FooReconciler, setup

__all__ = ["FOOS", "FooReconciler", "setup"]
