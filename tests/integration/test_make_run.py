"""`make run` (hack/run.py) as a new user meets it.

With $HOME/.kube/config and $KUBECONFIG both pointing at a reachable cluster (the session's
control plane), hack/run.py still starts its own local control plane and leaves that cluster
alone; it prints free 127.0.0.1 ports, so two runs side by side both come up; the live view
says what it waits for; SIGINT (Ctrl-C) stops everything quickly (the figure is printed; the
assertion is loose, < 10 s, as the machine is shared).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from cronjob_controller.api import CRONJOBS
from pyctrl.errors import NotFound
from pyctrl.kube import LEASES, RESTClient
from pyctrl.testing.envtest import ControlPlane, find_binaries
from pyctrl.testing.envtest.process import Proc, spawn
from tests.waiting import elapsed_until, poll

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 150.0  # two local control planes on a shared 2-core machine


def _log(proc: Proc) -> str:
    try:
        return proc.log_path.read_text(errors="replace")
    except OSError:
        return ""


def _wait_for_line(proc: Proc, pattern: str, timeout: float = START_TIMEOUT) -> re.Match[str]:
    def found() -> re.Match[str] | None:
        match = re.search(pattern, _log(proc))
        if match is None and not proc.running():
            raise AssertionError(f"{proc.name} exited ({proc.popen.returncode}):\n"
                                 f"{proc.log_tail(40)}")
        return match

    match = poll(found, timeout, interval=0.2)
    assert match is not None, f"{proc.name}: no {pattern!r} within {timeout}s:\n" + (
        proc.log_tail(40))
    return match


def _healthz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
            return int(resp.status)
    except OSError:
        return 0


def _healthy(port: int) -> Callable[[], bool]:
    return lambda: _healthz(port) == 200


@pytest.fixture
def user_env(control_plane: ControlPlane, tmp_path: Path) -> dict[str, str]:
    """A user whose kubeconfig (both ~/.kube/config and $KUBECONFIG) reaches a cluster."""
    if control_plane.external:
        pytest.skip("needs an envtest control plane to stand in for the user's cluster")
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    shutil.copy(control_plane.kubeconfig_path, home / ".kube" / "config")
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    env = {k: v for k, v in os.environ.items() if k != "PYCTRL_TEST_KUBECONFIG"}
    env.update({"HOME": str(home), "KUBECONFIG": str(home / ".kube" / "config"),
                "XDG_CACHE_HOME": cache, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"})
    return env


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[list[Proc]]:
    procs: list[Proc] = []
    yield procs
    for proc in procs:
        proc.stop(timeout=15)


def _start(name: str, env: dict[str, str], tmp_path: Path, procs: list[Proc]) -> Proc:
    proc = spawn(name, [sys.executable, str(ROOT / "hack" / "run.py")],
                 tmp_path / f"{name}.log", env=env)
    procs.append(proc)
    return proc


def test_make_run_ignores_the_users_cluster_and_two_runs_coexist_then_ctrl_c_is_quick(
    control_plane: ControlPlane, client: RESTClient, user_env: dict[str, str],
    tmp_path: Path, runs: list[Proc],
) -> None:
    # Nothing of make run's may land on the user's cluster (its sample, a lease).
    leases_before = {lease["metadata"]["name"]
                     for lease in client.list(LEASES, "default").get("items") or []}
    first = _start("run-1", user_env, tmp_path, runs)
    second = _start("run-2", user_env, tmp_path, runs)
    ports = {}
    for proc in (first, second):
        match = _wait_for_line(proc, r"metrics: http://127\.0\.0\.1:(\d+)/metrics\s+"
                                     r"probes: http://127\.0\.0\.1:(\d+)/healthz")
        ports[proc.name] = (int(match.group(1)), int(match.group(2)))
    servers = {}
    for proc in (first, second):
        servers[proc.name] = _wait_for_line(proc, r"local control plane at (\S+)").group(1)
        _wait_for_line(proc, r"waiting for the first run at \d\d:\d\d:\d\d \(default/hello\)")
        assert poll(_healthy(ports[proc.name][1]), 60), f"{proc.name} /healthz"
    # Not the user's cluster, and not each other's.
    assert control_plane.server not in servers.values()
    assert len(set(servers.values())) == 2
    assert len({p for pair in ports.values() for p in pair}) == 4
    for proc in (first, second):
        text = _log(proc)
        assert "Traceback" not in text and "using the REAL cluster" not in text
    # The user's cluster saw nothing: no sample CronJob, no controller lease.
    with pytest.raises(NotFound):
        client.get(CRONJOBS, "hello", "default")
    assert {lease["metadata"]["name"] for lease in
            client.list(LEASES, "default").get("items") or []} == leases_before

    # Ctrl-C: the controller, the live view and the local control plane all stop.
    os.killpg(first.pid, signal.SIGINT)
    took = elapsed_until(lambda: not first.running(), 30)
    print(f"\nmake run: SIGINT to exit took {took:.2f} s")
    assert first.popen.returncode == 0, first.log_tail(40)
    assert took < 10.0
    assert "stopped" in first.log_tail(5)
    # The other run is unaffected by the first one's exit.
    assert second.running() and _healthz(ports["run-2"][1]) == 200


def test_make_run_with_context_uses_that_cluster_and_says_so_first(
    control_plane: ControlPlane, user_env: dict[str, str], tmp_path: Path, runs: list[Proc],
) -> None:
    config = yaml.safe_load(Path(user_env["KUBECONFIG"]).read_text())
    context = config["current-context"]
    proc = spawn("run-ctx", [sys.executable, str(ROOT / "hack" / "run.py"),
                             f"--context={context}", "--namespace", f"none-{os.getpid()}"],
                 tmp_path / "run-ctx.log", env=user_env)
    runs.append(proc)
    match = _wait_for_line(proc, r"using the REAL cluster of context '([^']+)': server (\S+)")
    assert (match.group(1), match.group(2)) == (context, control_plane.server)
    text = _log(proc)
    assert text.index("using the REAL cluster") < text.index("installing the CRD")
    assert "starting a local control plane" not in text
    _wait_for_line(proc, r"controllers started")
    os.killpg(proc.pid, signal.SIGINT)
    elapsed_until(lambda: not proc.running(), 30)
    assert proc.popen.returncode == 0, proc.log_tail(40)


def test_make_run_shows_a_job_complete_and_the_history_limit_delete_an_older_one(
    user_env: dict[str, str], tmp_path: Path, runs: list[Proc],
) -> None:
    # The sample's pods run 20 s on kwok and one successful Job is kept: the first Job
    # completes, and once the second one completes too the first one is deleted. No step by
    # hand; about two to three minutes of real time (runs are on the minute).
    if find_binaries().kwok is None:
        pytest.skip("make run's Jobs run only with kwok (hack/controlplane/build.sh)")
    proc = _start("run-pods", user_env, tmp_path, runs)
    _wait_for_line(proc, r"waiting for the first run at")

    def created() -> list[str]:
        return re.findall(r">>> Job created: (default/hello-\d+) ", _log(proc))

    assert poll(lambda: len(created()) >= 1, 90), proc.log_tail(40)
    first = created()[0]
    _wait_for_line(proc, rf">>> Job Complete: {first} at ", 90)
    assert poll(lambda: len(created()) >= 2, 90), proc.log_tail(40)
    second = created()[1]
    _wait_for_line(proc, rf">>> Job Complete: {second} at ", 90)
    _wait_for_line(proc, rf">>> Job deleted: {first}\n", 60)
    text = _log(proc)
    assert "Traceback" not in text and ">>> Job Failed" not in text
    # In that order: created, complete, the next one complete, then the deletion.
    order = [text.index(f">>> Job created: {first}"), text.index(f">>> Job Complete: {first}"),
             text.index(f">>> Job Complete: {second}"), text.index(f">>> Job deleted: {first}")]
    assert order == sorted(order)
