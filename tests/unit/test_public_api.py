"""The public facade re-exports exactly what ``__all__`` promises, and nothing is missing."""

from __future__ import annotations

import importlib

import pytest

import pyctrl

FACADES = ["pyctrl", "pyctrl.cache", "pyctrl.workqueue", "pyctrl.kube", "pyctrl.record",
           "pyctrl.leaderelection", "pyctrl.errors", "pyctrl.testing", "pyctrl.testing.envtest",
           "pyctrl.webhook"]


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
