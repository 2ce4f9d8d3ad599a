"""``python -m pyctrl``: a user's mistake is one ``error:`` line on stderr and exit status 2,
never a traceback (issue 35 item 7), for each command that can meet it."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyctrl.cli import main

SETUP = "examples.sample_controller.controller:setup"
DEEP_LISTS = """
from typing import Any
from pyctrl import api
T: Any = int
for _ in range(1200):
    T = list[T]
@api.kind("deep.example.com/v1", "Deep")
class Deep(api.Object):
    spec: T = api.field(default_factory=list)
"""
DEEP_STRUCTS = """
from typing import Any
import msgspec
from pyctrl import api
T: Any = int
for i in range(300):
    T = msgspec.defstruct(f"N{i}", [("child", T | None, None)], bases=(api.Struct,),
                          module=__name__)
@api.kind("deep.example.com/v1", "Deep")
class Deep(api.Object):
    spec: T | None = None
"""
GOOD = """
from pyctrl import api
@api.kind("good.example.com/v1", "Good")
class Good(api.Object):
    spec: dict[str, str] = api.field(default_factory=dict)
def setup(manager: object) -> None:
    pass
def broken(manager: object) -> None:
    raise ValueError("no")
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory of user modules on sys.path (forgotten afterwards)."""
    (tmp_path / "m_syntax.py").write_text("def f(:\n")
    (tmp_path / "m_raises.py").write_text("raise RuntimeError('boom at import')\n")
    (tmp_path / "m_deep_lists.py").write_text(DEEP_LISTS)
    (tmp_path / "m_deep_structs.py").write_text(DEEP_STRUCTS)
    (tmp_path / "m_good.py").write_text(GOOD)
    (tmp_path / "garbage.yaml").write_text("garbage: [\n  - {\n")
    (tmp_path / "configmap.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "a_file").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in list(sys.modules):
        if name.startswith("m_"):
            del sys.modules[name]


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str], *words: str) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in out + err
    for word in words:
        assert word in err, err


@pytest.mark.parametrize(("argv", "words"), [
    (["gen", "crd", ""], ["'' is not a module name"]),
    (["gen", "crd", ":Good"], ["is not a module name"]),
    (["gen", "crd", "m syntax"], ["is not a module name"]),
    (["gen", "crd", "m_syntax"], ["m_syntax.py:1: invalid syntax"]),
    (["gen", "crd", "m_raises"], ["RuntimeError: boom at import", "m_raises.py:1"]),
    (["gen", "crd", "m_deep_lists"], ["recursion limit"]),
    (["gen", "crd", "m_deep_structs"], ["recursion limit"]),
    (["gen", "crd", "m_good", "--out", "a_file"], ["--out a_file: not a directory"]),
    (["gen", "crd", "m_good", "--out", "a_file/sub"], ["cannot write", "Not a directory"]),
    (["gen", "rbac", "m_raises:setup"], ["RuntimeError: boom at import"]),
    (["gen", "rbac", "m_syntax:setup"], ["invalid syntax"]),
    (["gen", "rbac", "m_good:setup", "--out", "."], ["Is a directory"]),
    (["gen", "webhook", "m_raises:setup", "--url", "https://h"], ["boom at import"]),
    (["gen", "rbac", "m_good:broken"], ["m_good:broken raised ValueError: no", "m_good.py"]),
    (["gen", "webhook", "m_good:broken", "--url", "https://h"], ["raised ValueError: no"]),
    (["run", "m_raises:setup"], ["RuntimeError: boom at import"]),
    (["run", SETUP, "--crd", "garbage.yaml"], ["garbage.yaml: not valid YAML (line"]),
    (["run", SETUP, "--crd", "configmap.yaml"],
     ["v1 ConfigMap x is not an apiextensions.k8s.io/v1 CustomResourceDefinition"]),
    (["run", SETUP, "--crd", "empty.yaml"], ["no CustomResourceDefinition"]),
    (["run", SETUP, "--crd", "a_file"], ["not a .yaml, .yml or .json file"]),
    (["run", SETUP, "--apply", "garbage.yaml"], ["not valid YAML"]),
])
def test_a_mistake_is_one_line_and_exit_2(argv: list[str], words: list[str], project: Path,
                                          capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[object] = []

    def enter(cluster: object) -> None:  # never start a control plane
        started.append(cluster)

    monkeypatch.setattr("pyctrl.cli.devrun.DevCluster.__enter__", enter)
    _fails(argv, capsys, *words)
    assert not started


def test_a_crd_directory_is_checked_file_by_file(project: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    crds = project / "crds"
    crds.mkdir()
    assert main(["gen", "crd", "m_good", "--out", str(crds)]) == 0
    shutil.copy(project / "configmap.yaml", crds / "z.yaml")
    capsys.readouterr()
    _fails(["run", SETUP, "--crd", str(crds)], capsys, "z.yaml", "ConfigMap")
