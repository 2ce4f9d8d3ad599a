"""make's prerequisite checks fail with one clear line, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "hack" / "prereqs.sh"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          env=env, timeout=30, check=False)


def test_current_python_passes() -> None:
    assert run("python", sys.executable).returncode == 0


def test_old_python_is_named_with_the_version_needed(tmp_path: Path) -> None:
    fake = tmp_path / "python3"
    fake.write_text('#!/bin/sh\ncase "$2" in *print*) echo 3.9.18;; *) exit 1;; esac\n')
    fake.chmod(0o755)
    out = run("python", str(fake))
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "3.9.18" in lines[0] and ">= 3.11" in lines[0]


def test_missing_go_names_go_and_kubebuilder_assets(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    out = subprocess.run(["/bin/bash", str(SCRIPT), "go"], capture_output=True, text=True,
                         env=env, timeout=30, check=False)
    assert out.returncode == 1
    [line] = out.stderr.strip().splitlines()
    assert "Go >= 1.25" in line and "KUBEBUILDER_ASSETS" in line


def test_kubebuilder_assets_make_go_unnecessary(tmp_path: Path) -> None:
    for name in ("etcd", "kube-apiserver"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    env = {"PATH": "/nonexistent", "KUBEBUILDER_ASSETS": str(tmp_path),
           "HOME": os.environ.get("HOME", "/")}
    out = subprocess.run(["/bin/bash", str(SCRIPT), "go"], capture_output=True, text=True,
                         env=env, timeout=30, check=False)
    assert out.returncode == 0, out.stderr
