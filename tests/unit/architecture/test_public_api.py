"""The public facade re-exports exactly what ``__all__`` promises, and nothing is missing."""

from __future__ import annotations

import importlib

import pytest

import pyctrl

FACADES = ["pyctrl", "pyctrl.cache", "pyctrl.workqueue", "pyctrl.kube", "pyctrl.record",
           "pyctrl.leaderelection", "pyctrl.errors", "pyctrl.testing", "pyctrl.testing.envtest",
           "pyctrl.webhook", "pyctrl.sharding", "pyctrl.serving", "pyctrl.reconcile",
           "pyctrl.builder", "pyctrl.handlers", "pyctrl.api"]


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
              "is_controlled_by", "set_controller_reference", "AlreadyOwned",
              "set_status_condition", "find_status_condition", "remove_status_condition",
              "has_finalizer", "create_or_update", "TypedClient", "Unstructured"}
    assert needed <= set(pyctrl.__all__)
    assert pyctrl.Request("ns", "a").key == "ns/a"
    assert {"PriorityQueue", "LOW_PRIORITY", "NORMAL_PRIORITY"} <= set(pyctrl.__all__)
    assert pyctrl.CONFIGMAPS.kind == "ConfigMap"


def test_common_kinds_have_resource_constants() -> None:
    """A user owning a Deployment and a Service finds both constants (issue 26, item 8)."""
    import pyctrl.kube.resource as resource_module

    expected = {
        "SERVICES": ("", "services", "Service", True),
        "DEPLOYMENTS": ("apps", "deployments", "Deployment", True),
        "REPLICA_SETS": ("apps", "replicasets", "ReplicaSet", True),
        "STATEFUL_SETS": ("apps", "statefulsets", "StatefulSet", True),
        "DAEMON_SETS": ("apps", "daemonsets", "DaemonSet", True),
        "NAMESPACES": ("", "namespaces", "Namespace", False),
        "NODES": ("", "nodes", "Node", False),
        "SERVICE_ACCOUNTS": ("", "serviceaccounts", "ServiceAccount", True),
        "PERSISTENT_VOLUME_CLAIMS": ("", "persistentvolumeclaims", "PersistentVolumeClaim", True),
        "PERSISTENT_VOLUMES": ("", "persistentvolumes", "PersistentVolume", False),
        "ROLES": ("rbac.authorization.k8s.io", "roles", "Role", True),
        "ROLE_BINDINGS": ("rbac.authorization.k8s.io", "rolebindings", "RoleBinding", True),
        "CLUSTER_ROLES": ("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", False),
        "INGRESSES": ("networking.k8s.io", "ingresses", "Ingress", True),
        "LEASES": ("coordination.k8s.io", "leases", "Lease", True),
        "CUSTOM_RESOURCE_DEFINITIONS": ("apiextensions.k8s.io", "customresourcedefinitions",
                                        "CustomResourceDefinition", False),
    }
    for name, (group, plural, kind, namespaced) in expected.items():
        res = getattr(pyctrl, name)
        assert (res.group, res.plural, res.kind, res.namespaced) == (
            group, plural, kind, namespaced), name
        assert name in pyctrl.__all__ and name in pyctrl.kube.__all__
    # Every constant of pyctrl.kube.resource is on both facades, and none is listed twice.
    constants = [n for n in resource_module.__all__ if n.isupper()]
    assert set(constants) <= set(pyctrl.__all__)
    assert len({getattr(resource_module, n) for n in constants}) == len(constants)


def test_help_on_the_write_helpers_shows_their_contracts() -> None:
    """``pyctrl.create_or_update``'s own docstring carries its contract (adoption included),
    and the dict-only duplicates of the typed client's writes are gone."""
    import pydoc

    text = pydoc.render_doc(pyctrl.create_or_update, renderer=pydoc.TextDoc())
    assert '"unchanged"' in text and "Conflict" in text and "AdoptionRefused" in text
    assert "module docstring" not in text
    assert not {"apply", "add_finalizer", "remove_finalizer"} & set(pyctrl.__all__)
    assert callable(pyctrl.TypedClient.apply) and callable(pyctrl.TypedClient.add_finalizer)


def test_facade_exports_the_one_reconcile_contract() -> None:
    """pyctrl.reconcile's contract and the one mapper handler, from ``pyctrl`` alone."""
    import pyctrl.reconcile

    needed = {"Request", "Result", "Reconciler", "FuncReconciler", "TerminalError", "MapFunc",
              "enqueue_requests"}
    assert needed <= set(pyctrl.__all__)
    for name in ("Request", "Result", "Reconciler", "FuncReconciler", "TerminalError"):
        assert getattr(pyctrl, name) is getattr(pyctrl.reconcile, name)
    assert not hasattr(pyctrl, "RequestReconciler")
