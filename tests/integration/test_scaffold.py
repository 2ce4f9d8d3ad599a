"""``pyctrl init`` + ``create api`` + ``create webhook`` (and a second version with its
conversion webhook) from the built wheel: the generated
project's own ``make test`` (its manifests checked against its code, ``mypy --strict``, its
unit tests and its integration tests on a real control plane) passes in a clean venv that
has only the wheel (tests/integration/dist.py), and the project installs there with its
``pyctrl-k8s==<version>`` requirement met (``pip check``). The docs' first commands
(README.md, docs/TUTORIAL.md: ``pyctrl init`` ... ``make test``, then ``make run``) run as
written."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
from pathlib import Path

import pytest

import pyctrl
from pyctrl.clock import RealClock
from pyctrl.errors import ApiError
from pyctrl.kube import Resource, RESTClient
from pyctrl.testing.envtest.process import spawn
from tests.integration.dist import ROOT, Dist, run, venv_with
from tests.tutorial import blocks
from tests.waiting import poll

_CLOCK = RealClock()

pytestmark = pytest.mark.integration


def _wheel_venv(tmp_path: Path, dist: Dist) -> tuple[Path, dict[str, str]]:
    """The venv with only the wheel (and this interpreter's site-packages for the
    dependencies), marked as the project's own (make setup's ``.installed``: it stands for
    the project's ``pip install``), and the environment that puts it first."""
    if shutil.which("make") is None:
        pytest.skip("no make on PATH")
    venv = tmp_path / "venv"
    venv_with(dist.wheel, venv)
    (venv / ".installed").touch()
    return venv, {"PATH": os.pathsep.join([str(venv / "bin"), os.environ.get("PATH", "")]),
                  "VENV": str(venv)}


def _run_lines(script: str, cwd: Path, env: dict[str, str]) -> tuple[Path, dict[str, float]]:
    """Each line of a shown block (``cd DIR`` moves, ``# ...`` comments dropped) in bash;
    the directory it ends in and each line's seconds."""
    took: dict[str, float] = {}
    for raw in script.strip().splitlines():
        line = raw.split("  #", 1)[0].strip()
        if line.startswith("cd "):
            cwd = cwd / line.removeprefix("cd ").strip()
            continue
        start = _CLOCK.monotonic()
        run(["bash", "-euo", "pipefail", "-c", line], cwd=cwd, env=env, timeout=400)
        took[line] = _CLOCK.monotonic() - start
    return cwd, took


def test_a_scaffolded_project_passes_its_own_make_test(tmp_path: Path,
                                                      built_dist: Dist) -> None:
    """docs/SCAFFOLD.md's block: init, create api, create webhook, a second version and its
    conversion webhook, make test."""
    venv, env = _wheel_venv(tmp_path, built_dist)
    shown = [body for info, body in blocks((ROOT / "docs" / "SCAFFOLD.md").read_text())
             if info == "sh scaffold-full"]
    assert len(shown) == 1
    assert shown[0].strip().splitlines()[-1] == "make test"
    body = shown[0].strip().rsplit("\n", 1)[0]  # make test below, to see its output
    work = tmp_path / "empty"
    work.mkdir()
    project, _ = _run_lines(body, work, env)
    crd = (project / "config" / "crd" / "backups.demo.example.com.yaml").read_text()
    assert "strategy: Webhook" in crd and "path: /convert-backup" in crd, crd
    assert (project / "config" / "webhook" / "manifests.yaml").is_file()
    assert f'"pyctrl-k8s=={pyctrl.__version__}"' in (project / "pyproject.toml").read_text()

    out = run(["make", "test"], cwd=project, env=env, timeout=400)
    assert "All checks passed!" in out, out  # ruff
    assert "Success: no issues found" in out, out  # mypy --strict
    # Unit: the command line 2, the reconciler 3, the webhooks 2, the conversion 2;
    # integration: 1 (the CRD with its two versions and conversion webhook installed).
    assert "10 passed" in out and "failed" not in out and "skipped" not in out, out
    where = run([str(venv / "bin" / "python"), "-c", "import pyctrl; print(pyctrl.__file__)"],
                cwd=project)
    assert Path(where.strip()).is_relative_to(venv), where

    # The project is an ordinary distribution: it installs, its requirement is met.
    python = str(venv / "bin" / "python")
    run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
         "--no-index", "--no-build-isolation", str(project)], cwd=tmp_path)
    run([sys.executable, "-m", "pip", "--python", python, "check"], cwd=tmp_path)
    assert "--leader-elect" in run([str(venv / "bin" / "backup-operator"), "--help"],
                                   cwd=tmp_path)


def _scaffold_blocks(text: str) -> tuple[str, str]:
    """The ```sh scaffold block and the ```sh scaffold-run block of a document."""
    shown = {info: body for info, body in blocks(text)
             if info in ("sh scaffold", "sh scaffold-run")}
    return shown["sh scaffold"], shown["sh scaffold-run"]


def test_the_docs_scaffold_commands_run_as_written(tmp_path: Path, built_dist: Dist) -> None:
    """README.md's and docs/TUTORIAL.md's first commands (the same two blocks in both), from
    an empty directory: ``pip install pyctrl-k8s`` is the one line replaced (the wheel is
    installed offline instead); ``make test`` uses that venv as the project's. Then ``make
    run`` until its sample is Ready, and Ctrl-C. Prints each step's time."""
    readme = _scaffold_blocks((ROOT / "README.md").read_text())
    tutorial = _scaffold_blocks((ROOT / "docs" / "TUTORIAL.md").read_text())
    assert readme == tutorial, "README.md and docs/TUTORIAL.md show the same commands"
    script, run_block = readme
    lines = script.strip().splitlines()
    assert lines[0] == "pip install pyctrl-k8s", lines
    _, env = _wheel_venv(tmp_path, built_dist)
    work = tmp_path / "empty"
    work.mkdir()
    cwd, took = _run_lines("\n".join(lines[1:]), work, env)
    assert run_block.strip() == "make run"
    log = tmp_path / "run.log"
    start = _CLOCK.monotonic()
    proc = spawn("make-run", ["make", "-C", str(cwd), "run"], log, env=dict(os.environ, **env))
    try:
        kubeconfig = poll(lambda: re.search(r"run: kubeconfig (\S+)", log.read_text()), 150)
        assert kubeconfig is not None, proc.log_tail(40)
        client = RESTClient.from_kubeconfig(kubeconfig.group(1))
        resource = Resource("demo.example.com", "v1", "backups", "Backup")

        def ready() -> bool:
            try:
                status = client.get(resource, "backup-sample", "default").get("status") or {}
            except ApiError:
                return False
            return any(c.get("type") == "Ready" and c.get("status") == "True"
                       for c in status.get("conditions") or [])

        assert poll(ready, 120), proc.log_tail(40)
        took["make run (to the sample Ready)"] = _CLOCK.monotonic() - start
        client.close()
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        stopped = poll(lambda: not proc.running(), 30)
        if not stopped:
            proc.stop(timeout=10)
    assert stopped, "make run did not stop on Ctrl-C"
    for step, seconds in took.items():
        print(f"\nscaffold docs: {step}: {seconds:.1f} s")
