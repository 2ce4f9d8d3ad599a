"""hack/in_rootfs.sh leaves nothing mounted on the host, however the command ends, and says so
when something is.

Runs only as root on a machine where hack/pythons_rootfs.sh has built the rootfs (make pythons
does); elsewhere the tests skip.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "hack" / "in_rootfs.sh"


def _rootfs() -> Path | None:
    text = (ROOT / "hack" / "pythons_rootfs.sh").read_text(encoding="utf-8")
    key = re.search(r"^ROOTFS_KEY=(\S+)$", text, re.MULTILINE)
    assert key is not None
    cache = Path(os.environ.get("PYCTRL_PYTHONS_CACHE", Path.home() / ".cache/pyctrl/pythons"))
    rootfs = cache / f"unstable-{key.group(1)}"
    return rootfs if (rootfs / ".pyctrl-complete").is_file() else None


ROOTFS = _rootfs()
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or ROOTFS is None,
                                reason="needs root and the rootfs of hack/pythons_rootfs.sh")


def mounted_under(rootfs: Path) -> list[str]:
    """Mount points at or under ``rootfs`` in this (the host's) mount namespace."""
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return [p for p in points if p == str(rootfs) or p.startswith(f"{rootfs}/")]


def run(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), str(ROOTFS), command], capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize(("command", "code"), [
    ("test -d /proc/self && test -f pyproject.toml", 0),  # inside: /proc and the checkout
    ("exit 7", 7),
    ("kill -KILL $$", 137),  # the command dies: the mounts go with its namespace
])
def test_the_command_runs_inside_and_nothing_stays_mounted(command: str, code: int) -> None:
    assert ROOTFS is not None
    out = run(command)
    assert out.returncode == code, out.stderr
    assert mounted_under(ROOTFS) == []


def test_a_mount_left_under_the_rootfs_fails_the_run_naming_it() -> None:
    assert ROOTFS is not None
    target = ROOTFS / "mnt"
    subprocess.run(["mount", "-t", "tmpfs", "pyctrl-test", str(target)], check=True)
    try:
        out = run("true")
    finally:
        subprocess.run(["umount", str(target)], check=True)
    assert out.returncode == 3
    assert f"still mounted after the run: {target}" in out.stderr
    assert mounted_under(ROOTFS) == []
