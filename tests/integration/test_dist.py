"""The built distributions install and run: `make dist`'s sdist and wheel (built once per
session, tests/integration/dist.py), the wheel installed into a clean venv, its console
scripts and generators run from there; ``pip check`` says the wheel's requirements are met by
what it sees.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import pyctrl
from pyctrl.testing.envtest.binaries import (
    GOMOD,
    BinariesNotFound,
    find_binaries,
    install_dir,
    installed,
)
from tests.integration.dist import ROOT, Dist, venv_with
from tests.integration.dist import run as _run

pytestmark = pytest.mark.integration

GOMOD_FILES = ("build.sh", "go.mod", "go.sum", "tools.go", "etcd/main.go", "kwok/go.mod",
               "kwok/go.sum", "kwok/tools.go")


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
    # `pyctrl envtest install`'s Go module files and build script, from the sdist too.
    gomod = {f"pyctrl/testing/envtest/gomod/{f}" for f in GOMOD_FILES}
    assert gomod <= files and gomod <= names, sorted(gomod - files) + sorted(gomod - names)
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

    # The control-plane binaries from the installed pyctrl, whose module files (not a
    # checkout's hack/) name the cache directory: it finds the one this checkout built, and
    # install returns at once (without Go on PATH, so a build could not even start).
    installed_gomod = purelib / "pyctrl" / "testing" / "envtest" / "gomod"
    for name in GOMOD_FILES:
        assert (installed_gomod / name).read_bytes() == (GOMOD / name).read_bytes(), name
    try:
        expected = find_binaries(build=False).directory
    except BinariesNotFound:
        pytest.skip("no control-plane binaries here to find (make controlplane)")
    pyctrl_cli = str(venv / "bin" / "pyctrl")
    assert "pyctrl envtest install" in (ROOT / "README.md").read_text()  # the one run here
    assert _run([pyctrl_cli, "envtest", "path"], cwd=work).strip() == str(expected)
    if os.environ.get("KUBEBUILDER_ASSETS") or installed(install_dir()):
        no_go = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                                if not (Path(d) / "go").exists())
        done = subprocess.run([pyctrl_cli, "envtest", "install"], cwd=work, capture_output=True,
                              text=True, timeout=60, check=False,
                              env={**os.environ, "PATH": no_go})
        assert (done.returncode, done.stdout.strip(), done.stderr) == (0, str(expected), "")
    assert str(expected) in _run([pyctrl_cli, "envtest", "list"], cwd=work)
