"""``python -m pyctrl run``: what can be checked without a control plane (the loop itself is
tests/integration/test_pyctrl_run.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyctrl.cli import main
from pyctrl.cli.devrun import DevCluster, free_ports


def test_free_ports_are_distinct() -> None:
    ports = free_ports(3)
    assert len(set(ports)) == 3 and all(p > 0 for p in ports)


def test_client_flags_reach_the_context() -> None:
    cluster = DevCluster(context="kind-dev", kubeconfig="/k/config")
    assert not cluster.local
    assert cluster.client_flags == ["--kubeconfig", "/k/config", "--context", "kind-dev"]
    assert DevCluster().local and DevCluster().client_flags == []


@pytest.mark.parametrize("argv", [
    ["nosuchmodule:setup"],
    ["examples.sample_controller.controller:setup", "--crd", "/no/such/crd.yaml"],
    ["examples.sample_controller.controller:setup", "--context", "nope",
     "--kubeconfig", "/no/such/kubeconfig"],
])
def test_usage_errors_exit_2_before_anything_starts(
        argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["run", *argv]) == 2
    assert capsys.readouterr().err.startswith("error: ")
