"""``pyctrl init`` + ``create api`` + ``create webhook`` from the built wheel: the generated
project's own ``make test`` (its manifests checked against its code, ``mypy --strict``, its
unit tests and its integration tests on a real control plane) passes in a clean venv that
has only the wheel (tests/integration/dist.py), and the project installs there with its
``pyctrl-k8s==<version>`` requirement met (``pip check``)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

import pyctrl
from tests.integration.dist import Dist, run, venv_with

pytestmark = pytest.mark.integration


def test_a_scaffolded_project_passes_its_own_make_test(tmp_path: Path,
                                                      built_dist: Dist) -> None:
    if shutil.which("make") is None:
        pytest.skip("no make on PATH")
    venv = tmp_path / "venv"
    purelib = venv_with(built_dist.wheel, venv)
    pyctrl_cli = str(venv / "bin" / "pyctrl")
    run([pyctrl_cli, "init", "shop-operator", "--group", "shop"], cwd=tmp_path)
    project = tmp_path / "shop-operator"
    run([pyctrl_cli, "create", "api", "--kind", "Order"], cwd=project)
    run([pyctrl_cli, "create", "webhook", "--kind", "Order"], cwd=project)
    assert (project / "config" / "crd" / "orders.shop.example.com.yaml").is_file()
    assert (project / "config" / "webhook" / "manifests.yaml").is_file()
    assert f'"pyctrl-k8s=={pyctrl.__version__}"' in (project / "pyproject.toml").read_text()

    # make test with this venv as the project's (its setup step stands for pip install).
    (venv / ".installed").touch()
    out = run(["make", "test", f"VENV={venv}"], cwd=project, timeout=400)
    assert "Success: no issues found" in out, out
    # Unit: the command line 2, the reconciler 3, the webhooks 2; integration: 1.
    assert "8 passed" in out and "failed" not in out and "skipped" not in out, out
    where = run([str(venv / "bin" / "python"), "-c", "import pyctrl; print(pyctrl.__file__)"],
                cwd=project)
    assert Path(where.strip()).is_relative_to(purelib), where

    # The project is an ordinary distribution: it installs, its requirement is met.
    python = str(venv / "bin" / "python")
    run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
         "--no-index", "--no-build-isolation", str(project)], cwd=tmp_path)
    run([sys.executable, "-m", "pip", "--python", python, "check"], cwd=tmp_path)
    assert "--leader-elect" in run([str(venv / "bin" / "shop-operator"), "--help"],
                                   cwd=tmp_path)
