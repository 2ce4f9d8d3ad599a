"""Fixtures of the chaos suite: its own control plane, so restarts and compaction stay here.

* ``chaos_plane`` (package scope): etcd + kube-apiserver with ``--watch-cache=false`` (a
  re-watch from a compacted resourceVersion then really answers 410 Gone) and a *lenient* copy
  of the CronJob CRD: no CEL rules and no ``required`` lists under ``spec``, standing in for
  objects that got past admission while the webhook was off. No kube-controller-manager: no
  test here needs garbage collection. Tests that need it skip on an external cluster
  (``PYCTRL_TEST_KUBECONFIG``), since they restart and compact our own processes.
* ``chaos_client``: an admin RESTClient for it; ``chaos_namespace``: a fresh namespace.
* ``procs``: :class:`ControllerProcs` for that namespace (controller subprocesses), all
  stopped after the test.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyctrl.kube import RESTClient
from pyctrl.testing.envtest import ControlPlane
from tests.integration.chaos.helpers import lenient_crds
from tests.integration.controller_procs import ControllerProcs


def pytest_configure(config: pytest.Config) -> None:
    # Also belongs in pyproject.toml's markers list; registered here so the suite runs alone.
    config.addinivalue_line("markers", "chaos: failure injection (process kills, apiserver "
                                       "restarts, etcd compaction, bad input floods)")


@pytest.fixture(scope="package")
def chaos_plane() -> Iterator[ControlPlane]:
    """A control plane owned by the chaos suite (see module docstring)."""
    plane = ControlPlane(apiserver_args=["--watch-cache=false"], controller_manager=False)
    if plane.external:
        pytest.skip("the chaos suite restarts and compacts its own control plane")
    with plane:
        plane.install_crds(lenient_crds())
        yield plane


@pytest.fixture(scope="package")
def chaos_client(chaos_plane: ControlPlane) -> Iterator[RESTClient]:
    client = RESTClient.from_kubeconfig(chaos_plane.kubeconfig_path, qps=500, burst=1000)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def chaos_namespace(chaos_plane: ControlPlane) -> Iterator[str]:
    name = f"chaos-{uuid.uuid4().hex[:8]}"
    chaos_plane.kubectl("create", "namespace", name)
    yield name
    chaos_plane.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def procs(chaos_plane: ControlPlane, chaos_client: RESTClient, chaos_namespace: str,
          tmp_path: Path) -> Iterator[ControllerProcs]:
    made = ControllerProcs(chaos_plane, chaos_client, chaos_namespace, tmp_path)
    try:
        yield made
    finally:
        made.stop_all()
