"""Shared fixtures: one real control plane per test session, a client, a fresh namespace.

The control plane comes from :class:`pyctrl.testing.envtest.ControlPlane`: local etcd +
kube-apiserver + kube-controller-manager (garbage collection), or the cluster named by
``PYCTRL_TEST_KUBECONFIG`` (e.g. kind). Unit tests never touch these fixtures.

``pods_plane`` / ``pods_client`` / ``pods_namespace`` are the same for a second control plane
in pods mode (kube-scheduler, kwok and fake nodes run Jobs' pods to the end; see
:mod:`pyctrl.testing.envtest.pods`), started only when a test asks for it; tests using it
belong to the ``pods`` xdist group, so one worker starts it. They skip on an existing
cluster: its pods would run real images and ignore kwok's annotations.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

from pyctrl import configure_logging
from pyctrl.testing.envtest import ControlPlane, find_binaries

# Logs go through stdlib logging so pytest captures them per test (shown on failure only).
configure_logging("console", os.environ.get("PYCTRL_TEST_LOG_LEVEL", "info"))

# Property and fuzz tests (tests/unit/fuzz): "ci" bounds them for `make test`; run the long
# profile with HYPOTHESIS_PROFILE=long (README, "Fuzzing"). Tests that pin max_examples in
# their own @settings keep their count under either profile.
settings.register_profile("ci", max_examples=200, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=20_000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

if TYPE_CHECKING:
    from pyctrl.kube.client import RESTClient

ROOT = Path(__file__).resolve().parent.parent
CRD_DIRS = [ROOT / "crds", ROOT / "examples" / "sample_controller" / "config" / "crd",
            ROOT / "examples" / "website" / "config" / "crd"]


def _plane(*, pods: bool) -> Iterator[ControlPlane]:
    crd_dirs = [p for p in CRD_DIRS if p.exists()]
    with ControlPlane(crd_dirs=crd_dirs, controller_manager=True, pods=pods) as cp:
        yield cp


def _admin_client(plane: ControlPlane) -> RESTClient:
    from pyctrl.kube.client import RESTClient

    return RESTClient.from_kubeconfig(plane.kubeconfig_path, qps=200, burst=400)


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """The session's control plane, with the project's CRDs installed."""
    yield from _plane(pods=False)


@pytest.fixture(scope="session")
def client(control_plane: ControlPlane) -> RESTClient:
    """A pyctrl REST client authenticated as the control plane's admin."""
    return _admin_client(control_plane)


def _fresh_namespace(plane: ControlPlane) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:10]}"
    plane.kubectl("create", "namespace", name)
    yield name
    plane.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def namespace(control_plane: ControlPlane) -> Iterator[str]:
    """A fresh namespace for one test; deleted (asynchronously) afterwards."""
    yield from _fresh_namespace(control_plane)


@pytest.fixture(scope="session")
def pods_plane() -> Iterator[ControlPlane]:
    """A control plane in pods mode, with the project's CRDs (see module docstring)."""
    if os.environ.get("PYCTRL_TEST_KUBECONFIG"):
        pytest.skip("pods mode runs kwok's fake pods on a local control plane only")
    if find_binaries().kwok is None:  # KUBEBUILDER_ASSETS: setup-envtest's layout has none
        pytest.skip("pods mode needs kube-scheduler and kwok (hack/controlplane/build.sh)")
    yield from _plane(pods=True)


@pytest.fixture(scope="session")
def pods_client(pods_plane: ControlPlane) -> RESTClient:
    """An admin REST client of ``pods_plane``."""
    return _admin_client(pods_plane)


@pytest.fixture
def pods_namespace(pods_plane: ControlPlane) -> Iterator[str]:
    """A fresh namespace of ``pods_plane`` for one test."""
    yield from _fresh_namespace(pods_plane)
