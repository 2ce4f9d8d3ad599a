"""A user's project type-checks against an installed pyctrl with ``mypy --strict``, no MYPYPATH.

Two installs are checked, each into a throwaway venv (its dependencies come from the project
venv through a ``.pth`` line, so nothing is downloaded): the built wheel (it must ship
``py.typed``) and the editable install the Makefile makes (``editable_mode=compat``: a plain
path entry in a ``.pth`` file, which mypy follows; setuptools' default editable mode installs
an import hook that mypy cannot see, and the test shows that too, so it fails if the
Makefile's choice stops mattering or stops working). mypy must find pyctrl's types: a
deliberate type error in the user's file is reported, and nothing else is.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

USER_CODE = '''\
import pyctrl
from pyctrl import Request, Result
from pyctrl.models.core_v1 import ConfigMap
from pyctrl.testing import FakeClient, synced_lister


def sync(request: Request) -> Result:
    return Result(requeue_after=float(len(request.key)))


def make(lister: pyctrl.Lister[ConfigMap]) -> list[str]:
    """A reconciler's helper typed against the one Lister protocol."""
    return [cm.metadata.name for cm in lister.list("default")] + [
        lister.get("default", "a").metadata.name,
        *(cm.metadata.name for cm in lister.by_index(pyctrl.CONTROLLER_UID_INDEX, "uid"))]


def wire(manager: pyctrl.Manager) -> None:
    builder = manager.controller("c").for_(ConfigMap)
    make(builder.lister_for(ConfigMap))                 # the production lister
    make(manager.informers.lister_for(ConfigMap))       # one informer's
    make(synced_lister(FakeClient(), ConfigMap))        # the unit tests'


wrong: int = pyctrl.SERVICES
'''
EXPECTED = (f"user.py:{len(USER_CODE.splitlines())}: error: Incompatible types in assignment "
            '(expression has type "Resource"')


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path("
                           "'purelib'))"], check=True, capture_output=True, text=True,
                          env=_env()).stdout.strip()
    # pyctrl's dependencies, from the project venv (a path line: mypy follows it too).
    Path(site, "zz_project_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


def _pip_install(python: Path, *args: str) -> None:
    subprocess.run([str(BIN / "pip"), "--python", str(python), "install", "--quiet",
                    "--no-deps", *args], check=True, cwd=ROOT, env=_env(), timeout=600)


def _mypy(python: Path, project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "mypy"), "--strict", "--no-incremental", "--python-executable", str(python),
         "user.py"], check=False, cwd=project, capture_output=True, text=True, env=_env(),
        timeout=600)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("user_project")
    (path / "user.py").write_text(USER_CODE)
    return path


def _assert_only_the_deliberate_error(result: subprocess.CompletedProcess[str]) -> None:
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and errors[0].startswith(EXPECTED), result.stdout + result.stderr


@pytest.mark.timeout(900)
def test_wheel_ships_py_typed_and_type_checks(tmp_path: Path, project: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([str(BIN / "pip"), "wheel", "--quiet", "--no-deps", "-w", str(dist), "."],
                   check=True, cwd=ROOT, env=_env(), timeout=600)
    (wheel,) = dist.glob("pyctrl_k8s-*.whl")
    assert "pyctrl/py.typed" in zipfile.ZipFile(wheel).namelist()
    python = _venv(tmp_path / "venv")
    _pip_install(python, str(wheel))
    _assert_only_the_deliberate_error(_mypy(python, project))


@pytest.mark.timeout(900)
def test_editable_install_type_checks_in_compat_mode(tmp_path: Path, project: Path) -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "--config-settings editable_mode=compat" in makefile and "-e '.[dev]'" in makefile
    compat = _venv(tmp_path / "compat")
    _pip_install(compat, "--config-settings", "editable_mode=compat", "-e", ".")
    _assert_only_the_deliberate_error(_mypy(compat, project))
    # Why the Makefile asks for compat: the default editable install hides pyctrl from mypy.
    default = _venv(tmp_path / "default")
    _pip_install(default, "-e", ".")
    result = _mypy(default, project)
    assert 'Cannot find implementation or library stub for module named "pyctrl"' in (
        result.stdout), result.stdout
