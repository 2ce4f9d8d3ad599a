"""pyproject.toml's release metadata: one version, the console scripts, the license, the
Pythons we test on, and a CHANGELOG entry for the version."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pyctrl

ROOT = Path(__file__).resolve().parents[3]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_version_is_single_sourced_and_has_a_changelog_entry() -> None:
    project = PROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    attr = PROJECT["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    module, _, name = attr.rpartition(".")
    assert getattr(importlib.import_module(module), name) == pyctrl.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", pyctrl.__version__)
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    first = re.search(r"^## (\S+)", changelog, re.MULTILINE)
    assert first is not None and first.group(1) == pyctrl.__version__


def test_console_scripts_resolve() -> None:
    scripts = PROJECT["project"]["scripts"]
    assert set(scripts) == {"pyctrl", "cronjob-controller"}
    for target in scripts.values():
        module, _, func = target.partition(":")
        assert callable(getattr(importlib.import_module(module), func))


def test_pyctrl_version_flag() -> None:
    out = subprocess.run([sys.executable, "-m", "pyctrl", "--version"], capture_output=True,
                         text=True, check=True, cwd=ROOT).stdout
    assert out.split() == ["python", "-m", "pyctrl", pyctrl.__version__]


def test_license_and_build_floor() -> None:
    project = PROJECT["project"]
    assert project["license"] == "Apache-2.0"
    assert "Apache License" in (ROOT / "LICENSE").read_text(encoding="utf-8")[:200]
    # setuptools < 77 rejects an SPDX string in `license`.
    assert "setuptools>=77" in PROJECT["build-system"]["requires"]


def test_classifiers_name_the_pythons_we_test() -> None:
    classifiers = set(PROJECT["project"]["classifiers"])
    versions = {c.rsplit(" ", 1)[1] for c in classifiers
                if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)}
    assert versions == {"3.11", "3.12", "3.13", "3.14", "3.15"}
    assert PROJECT["project"]["requires-python"] == ">=3.11"
    assert PROJECT["project"]["name"] != "pyctrl", "PyPI's pyctrl is another project"


def test_dev_tools_are_pinned_by_the_lock_make_setup_uses() -> None:
    """A ruff or mypy release cannot turn make test red: setup installs under the lock."""
    lock = (ROOT / "requirements" / "dev.lock").read_text(encoding="utf-8").splitlines()
    pins = dict(line.lower().split("==", 1) for line in lock if line and line[0] != "#")
    extras = PROJECT["project"]["optional-dependencies"]
    for extra in ("test", "docs", "bench"):
        for requirement in extras[extra]:
            name = re.match(r"[A-Za-z0-9._-]+", requirement)
            assert name is not None
            normalized = name.group(0).lower()
            if normalized != "pyctrl-k8s":
                assert normalized in pins, f"{normalized} ({extra}) is not pinned"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "-c requirements/dev.lock -e '.[dev]'" in makefile
    pythons = (ROOT / "hack" / "pythons.sh").read_text()
    assert "-c requirements/dev.lock -e '.[test,docs,bench]'" in pythons
