"""The built distributions install and run: `make dist`'s sdist and wheel (built once per
session, tests/integration/dist.py), the wheel installed into a clean venv, its console
scripts and generators run from there; ``pip check`` says the wheel's requirements are met by
what it sees.
"""

from __future__ import annotations

import shutil
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import pyctrl
from tests.integration.dist import ROOT, Dist, venv_with
from tests.integration.dist import run as _run

pytestmark = pytest.mark.integration


def test_sdist_and_wheel_build_install_and_run(tmp_path: Path, built_dist: Dist) -> None:
    wheel, sdist = built_dist.wheel, built_dist.sdist
    version = pyctrl.__version__
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"LICENSE", "README.md", "pyproject.toml", "pyctrl/py.typed",
            "pyctrl/api/kubernetes-openapi.json", "cronjob_controller/__main__.py"} <= names
    with zipfile.ZipFile(wheel) as whl:
        files = set(whl.namelist())
        entry_points = whl.read(f"pyctrl_k8s-{version}.dist-info/entry_points.txt").decode()
    assert {"pyctrl/py.typed", "cronjob_controller/py.typed",
            "pyctrl/api/kubernetes-openapi.json",
            "pyctrl/cli/scaffold/templates/init/Makefile.tmpl",
            "pyctrl/cli/scaffold/templates/init/tests/unit/test_main.py.tmpl",
            "pyctrl/cli/scaffold/templates/api/__package__/controllers/__lower__.py.tmpl",
            f"pyctrl_k8s-{version}.dist-info/licenses/LICENSE"} <= files
    assert not any(f.startswith(("tests/", "examples/", "bench/")) for f in files)
    assert not any(f.startswith("pyctrl/cli/scaffold/templates/") and not f.endswith(".tmpl")
                   for f in files), "only templates under templates/"
    assert "pyctrl = pyctrl.cli:main" in entry_points

    venv = tmp_path / "venv"
    purelib = venv_with(wheel, venv)
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "check"], cwd=tmp_path)

    # Imports come from the wheel, not from this checkout.
    where = _run([str(python), "-c", "import pyctrl, cronjob_controller; "
                  "print(pyctrl.__file__); print(cronjob_controller.__file__); "
                  "print(pyctrl.__version__)"], cwd=tmp_path).split()
    assert all(Path(p).is_relative_to(purelib) for p in where[:2]), where
    assert where[2] == version

    assert "gen" in _run([str(venv / "bin" / "pyctrl"), "--help"], cwd=tmp_path)
    assert version in _run([str(venv / "bin" / "pyctrl"), "--version"], cwd=tmp_path)
    assert "--leader-elect" in _run([str(venv / "bin" / "cronjob-controller"), "--help"],
                                    cwd=tmp_path)
    # The tutorial's generator on the example: its API module importable from the working
    # directory (a copy of examples/ only), the CRDs checked against the committed ones.
    work = tmp_path / "work"
    shutil.copytree(ROOT / "examples", work / "examples",
                    ignore=shutil.ignore_patterns("__pycache__"))
    _run([str(python), "-m", "pyctrl", "gen", "crd", "examples.website.api", "--out",
          str(ROOT / "examples" / "website" / "config" / "crd"), "--check"], cwd=work)
