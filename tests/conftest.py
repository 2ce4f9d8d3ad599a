"""Shared fixtures: one real control plane per test session, a client, a fresh namespace.

The control plane comes from :class:`pyctrl.testing.envtest.ControlPlane`: local etcd +
kube-apiserver + kube-controller-manager (garbage collection), or the cluster named by
``PYCTRL_TEST_KUBECONFIG`` (e.g. kind). Unit tests never touch these fixtures.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pyctrl import configure_logging
from pyctrl.testing.envtest import ControlPlane

# Logs go through stdlib logging so pytest captures them per test (shown on failure only).
configure_logging("console", os.environ.get("PYCTRL_TEST_LOG_LEVEL", "info"))

if TYPE_CHECKING:
    from pyctrl.kube.client import RESTClient

ROOT = Path(__file__).resolve().parent.parent
CRD_DIRS = [ROOT / "crds", ROOT / "examples" / "sample_controller" / "crd.yaml"]


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """The session's control plane, with the project's CRDs installed."""
    crd_dirs = [p for p in CRD_DIRS if p.exists()]
    with ControlPlane(crd_dirs=crd_dirs, controller_manager=True) as cp:
        yield cp


@pytest.fixture(scope="session")
def client(control_plane: ControlPlane) -> RESTClient:
    """A pyctrl REST client authenticated as the control plane's admin."""
    from pyctrl.kube.client import RESTClient

    return RESTClient.from_kubeconfig(control_plane.kubeconfig_path, qps=200, burst=400)


@pytest.fixture
def namespace(control_plane: ControlPlane) -> Iterator[str]:
    """A fresh namespace for one test; deleted (asynchronously) afterwards."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    control_plane.kubectl("create", "namespace", name)
    yield name
    control_plane.kubectl("delete", "namespace", name, "--wait=false", check=False)
