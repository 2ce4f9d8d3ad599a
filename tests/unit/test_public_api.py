"""The public facade re-exports exactly what ``__all__`` promises, and nothing is missing."""

from __future__ import annotations

import importlib

import pytest

import pyctrl

FACADES = ["pyctrl", "pyctrl.cache", "pyctrl.workqueue", "pyctrl.kube", "pyctrl.record",
           "pyctrl.leaderelection", "pyctrl.errors", "pyctrl.testing", "pyctrl.testing.envtest",
           "pyctrl.webhook", "pyctrl.sharding"]


@pytest.mark.parametrize("name", FACADES)
def test_all_names_resolve(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported, f"{name} must declare __all__"
    assert len(set(exported)) == len(exported), "duplicates in __all__"
    missing = [n for n in exported if not hasattr(module, n)]
    assert missing == []


def test_facade_covers_a_controller_authors_needs() -> None:
    needed = {"Manager", "Controller", "Result", "Reconciler", "SharedInformerFactory",
              "RateLimitingQueue", "LeaderElector", "EventRecorder", "enqueue_object",
              "enqueue_owner", "TerminalError", "NotFound", "RESTClient", "Clock"}
    assert needed <= set(pyctrl.__all__)


def test_facade_covers_the_builder_and_helpers() -> None:
    """What examples/configmap_mirror and the README use, from ``pyctrl`` alone."""
    needed = {"Builder", "Request", "Predicate", "Object", "CONFIGMAPS", "SECRETS",
              "DEPLOYMENTS", "JOBS", "EVENTS", "retry_on_conflict", "controller_of",
              "is_controlled_by", "set_controller_reference", "AlreadyOwnedError",
              "set_status_condition", "find_status_condition", "remove_status_condition",
              "add_finalizer", "remove_finalizer", "create_or_update", "apply"}
    assert needed <= set(pyctrl.__all__)
    assert pyctrl.Request("ns", "a").key == "ns/a"
    assert {"PriorityQueue", "LOW_PRIORITY", "NORMAL_PRIORITY"} <= set(pyctrl.__all__)
    assert pyctrl.CONFIGMAPS.kind == "ConfigMap"
