"""The runtime dependency set: no kubernetes (an extra, for legacy auth providers), no croniter
(a test oracle), and the image's lock pins exactly what pyctrl-k8s[cronjob] installs."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def test_kubernetes_and_croniter_are_not_runtime_dependencies() -> None:
    runtime = {_name(r) for r in PROJECT["dependencies"]}
    runtime |= {_name(r) for r in PROJECT["optional-dependencies"]["cronjob"]}
    assert not runtime & {"kubernetes", "croniter"}
    extras = PROJECT["optional-dependencies"]
    assert {_name(r) for r in extras["kubernetes"]} == {"kubernetes"}
    assert "croniter" in {_name(r) for r in extras["test"]}
    assert set(extras) >= {"test", "docs", "bench", "fuzz", "dev", "cronjob", "kubernetes"}


def test_the_image_lock_pins_the_runtime_dependencies_only() -> None:
    lock = ROOT / "requirements" / "runtime.lock"
    pinned = {_name(line) for line in lock.read_text().splitlines()
              if line and not line.startswith("#")}
    wanted = {_name(r) for r in PROJECT["dependencies"]}
    wanted |= {_name(r) for r in PROJECT["optional-dependencies"]["cronjob"]}
    assert wanted <= pinned
    assert pinned - wanted == {"cffi", "pycparser"}  # cryptography's own dependencies


def test_the_operator_and_the_framework_run_without_kubernetes_or_croniter() -> None:
    """A fresh interpreter in which importing either fails, as when neither is installed."""
    code = (
        "import sys\n"
        "sys.modules['kubernetes'] = None; sys.modules['croniter'] = None\n"
        "import pyctrl, pyctrl.kube, pyctrl.testing, pyctrl.serving, pyctrl.webhook\n"
        "import cronjob_controller.__main__ as main, cronjob_controller.wiring\n"
        "from cronjob_controller.dialect import croniter_expr\n"
        "sys.argv = ['cronjob-controller', '--help']\n"
        "try:\n"
        "    main.main()\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "--leader-elect" in done.stdout
