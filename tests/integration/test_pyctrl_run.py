"""``python -m pyctrl run MODULE:setup``: the dev loop as a user meets it.

Locally it starts its own control plane (never the user's cluster), installs the CRD, applies
the samples and runs the controllers (the sample controller makes the Foo's Deployment);
Ctrl-C stops it all quickly. With ``--context`` it uses that cluster and says so first; an
unknown context is a usage error.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from examples.sample_controller import FOOS
from pyctrl.errors import NotFound
from pyctrl.kube import DEPLOYMENTS, RESTClient
from pyctrl.testing.envtest import ControlPlane
from pyctrl.testing.envtest.process import Proc, spawn
from tests.integration.test_make_run import _log, _wait_for_line, user_env  # noqa: F401
from tests.waiting import elapsed_until, poll

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
SETUP = "examples.sample_controller.controller:setup"
CRD = str(ROOT / "examples" / "sample_controller" / "config" / "crd")


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for proc in started:
        proc.stop(timeout=15)


def _pyctrl_run(name: str, args: list[str], env: dict[str, str], tmp_path: Path,
                procs: list[Proc]) -> Proc:
    proc = spawn(name, [sys.executable, "-m", "pyctrl", "run", *args],
                 tmp_path / f"{name}.log", env=env)
    procs.append(proc)
    return proc


def test_run_starts_a_local_plane_installs_the_crd_runs_the_setup_and_stops_on_ctrl_c(
    user_env: dict[str, str], tmp_path: Path, procs: list[Proc],  # noqa: F811
) -> None:
    sample = tmp_path / "foo.yaml"
    sample.write_text(yaml.safe_dump({
        "apiVersion": "samplecontroller.pyctrl.io/v1alpha1", "kind": "Foo",
        "metadata": {"name": "demo", "namespace": "default"},
        "spec": {"deploymentName": "demo-web", "replicas": 1}}))
    proc = _pyctrl_run("run", [SETUP, "--crd", CRD, "--apply", str(sample)], user_env,
                       tmp_path, procs)
    kubeconfig = _wait_for_line(proc, r"run: kubeconfig (\S+)").group(1)
    _wait_for_line(proc, r"controllers started")
    text = _log(proc)
    assert text.index("applying") < text.index("running the controllers")
    assert "using the REAL cluster" not in text
    client = RESTClient.from_kubeconfig(kubeconfig)
    try:
        def deployment() -> bool:
            try:
                return bool(client.get(DEPLOYMENTS, "demo-web", "default"))
            except NotFound:
                return False

        assert poll(deployment, 60), proc.log_tail(40)
    finally:
        client.close()
    os.killpg(proc.pid, signal.SIGINT)
    took = elapsed_until(lambda: not proc.running(), 30)
    print(f"\npyctrl run: SIGINT to exit took {took:.2f} s")
    assert proc.popen.returncode == 0, proc.log_tail(40)
    assert took < 10.0
    assert proc.log_tail(5).rstrip().endswith("run: stopped")
    assert not Path(kubeconfig).exists()  # its files are removed


def test_run_with_context_uses_that_cluster_and_installs_the_crd_there(
    control_plane: ControlPlane, client: RESTClient, user_env: dict[str, str],  # noqa: F811
    tmp_path: Path, procs: list[Proc],
) -> None:
    context = yaml.safe_load(Path(user_env["KUBECONFIG"]).read_text())["current-context"]
    proc = _pyctrl_run("run-ctx", [SETUP, "--crd", CRD, f"--context={context}",
                                   "--namespace", f"none-{os.getpid()}"],
                       user_env, tmp_path, procs)
    match = _wait_for_line(proc, r"using the REAL cluster of context '([^']+)': server (\S+)")
    assert (match.group(1), match.group(2)) == (context, control_plane.server)
    _wait_for_line(proc, r"controllers started")
    assert client.list(FOOS, "default", limit=1) is not None  # the CRD is served there
    assert "starting a local control plane" not in _log(proc)
    os.killpg(proc.pid, signal.SIGINT)
    elapsed_until(lambda: not proc.running(), 30)
    assert proc.popen.returncode == 0, proc.log_tail(40)


def test_run_with_an_unknown_context_is_a_usage_error(
    user_env: dict[str, str], tmp_path: Path, procs: list[Proc],  # noqa: F811
) -> None:
    proc = _pyctrl_run("run-bad", [SETUP, "--context=nope"], user_env, tmp_path, procs)
    elapsed_until(lambda: not proc.running(), 60)
    assert proc.popen.returncode == 2
    assert re.search(r"error: .*nope", _log(proc))
