"""docs/TUTORIAL.md as written: every ```sh tutorial block runs (bash -e, from the repository
root, the venv's python first on PATH); the ```sh tutorial-run block (python -m pyctrl run)
runs in the background while the ```sh tutorial-second-terminal block runs against the
kubeconfig it printed (its `export KUBECONFIG=` line is that path); then Ctrl-C stops it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pyctrl.testing.envtest.binaries import find_binaries
from pyctrl.testing.envtest.process import Proc, spawn
from tests.tutorial import ROOT, blocks
from tests.waiting import elapsed_until, poll

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    kubectl = find_binaries().kubectl
    path = [str(Path(sys.executable).parent)]
    if kubectl is not None:
        path.append(str(kubectl.parent))
    env["PATH"] = os.pathsep.join([*path, env.get("PATH", "")])
    return env


def _bash(script: str, env: dict[str, str]) -> None:
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=400, check=False)
    assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"


def _start_run(body: str, env: dict[str, str], log: Path) -> Proc:
    """The `pyctrl run` block in the background, until its controllers started; sets
    ``env["KUBECONFIG"]`` to the kubeconfig it printed."""
    run = spawn("tutorial-run", ["bash", "-c", f"cd {ROOT} && exec {body.strip()}"], log,
                env=env)
    try:
        def text() -> str:
            return log.read_text(errors="replace")

        assert poll(lambda: "controllers started" in text() or not run.running(), 150), (
            run.log_tail(40))
        assert run.running(), run.log_tail(40)
        match = re.search(r"run: kubeconfig (\S+)", text())
        assert match is not None
        env["KUBECONFIG"] = match.group(1)
    except BaseException:
        run.stop(timeout=15)
        raise
    return run


def _second_terminal(body: str, env: dict[str, str], run: Proc) -> None:
    """The block run next to `pyctrl run`, then Ctrl-C to the run."""
    script = "\n".join(line for line in body.splitlines()
                       if not line.startswith("export KUBECONFIG="))
    try:
        _bash(script, env)
    finally:
        os.killpg(run.pid, signal.SIGINT)
        took = elapsed_until(lambda: not run.running(), 30)
        print(f"\ntutorial: pyctrl run stopped {took:.2f} s after SIGINT")
    assert run.popen.returncode == 0, run.log_tail(40)


def test_the_tutorial_runs_as_written(tmp_path: Path) -> None:
    env = _env()
    ran = 0
    run: Proc | None = None
    for info, body in blocks():
        if info == "sh tutorial":
            _bash(body, env)
        elif info == "sh tutorial-run":
            run = _start_run(body, env, tmp_path / "run.log")
        elif info == "sh tutorial-second-terminal":
            assert run is not None
            _second_terminal(body, env, run)
        else:
            continue
        ran += 1
    assert ran >= 5
