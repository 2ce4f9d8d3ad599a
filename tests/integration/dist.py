"""The built distributions, once per session, and a clean venv with the wheel installed
(tests/integration/test_dist.py and test_scaffold.py).

Offline on purpose (a fresh CI machine may have no index): the sdist and then the wheel from
it are built with ``python -m build --no-isolation`` (the test extra installs the build
backend), the wheel is installed with ``--no-deps --no-index`` into a venv made without
system site-packages, and that venv reaches the dependencies through a ``.pth`` line naming
this interpreter's site-packages. A ``.pth`` line only appends the directory to ``sys.path``
(the ``.pth`` files inside it, such as an editable install's, are not processed), so
``pyctrl`` and ``cronjob_controller`` come from the installed wheel.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pyctrl

ROOT = Path(__file__).resolve().parents[2]


def run(argv: list[str], cwd: Path, timeout: float = 300, *, clean: bool = True,
        env: dict[str, str] | None = None) -> str:
    """Run ``argv``; ``clean``: without PYTHONPATH (the installed venv sees only itself)."""
    full = dict(os.environ) | (env or {})
    if clean:
        full.pop("PYTHONPATH", None)
    done = subprocess.run(argv, cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@dataclass(frozen=True)
class Dist:
    """``make dist``'s two files."""

    wheel: Path
    sdist: Path


def build(tmp: Path) -> Dist:
    """The sdist from a copy of the tree (build writes egg-info beside the sources), the
    wheel from the unpacked sdist: what the sdist lacks, the wheel lacks."""
    src = tmp / "src"
    anywhere = shutil.ignore_patterns(".git", ".venv*", "__pycache__", "*.egg-info",
                                      ".*_cache", ".hypothesis")
    # The checkout's own directories, not same-named ones inside the package (the
    # scaffold's templates have tests/ and hack/).
    top = {"build", "dist", "site", "bench", "tests", "docs", "manifests", "crds", "hack"}

    def ignore(directory: str, names: list[str]) -> set[str]:
        skipped = set(anywhere(directory, names))
        return skipped | (top & set(names)) if Path(directory) == ROOT else skipped

    shutil.copytree(ROOT, src, ignore=ignore)
    out = tmp / "dist"
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
        cwd=tmp, clean=False)
    version = pyctrl.__version__
    dist = Dist(out / f"pyctrl_k8s-{version}-py3-none-any.whl",
                out / f"pyctrl_k8s-{version}.tar.gz")
    assert dist.wheel.is_file() and dist.sdist.is_file(), sorted(p.name for p in out.iterdir())
    return dist


def venv_with(wheel: Path, venv: Path) -> Path:
    """A venv (no pip, no system site-packages) with ``wheel`` installed and this
    interpreter's site-packages appended for the dependencies; its purelib directory."""
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=venv.parent)
    python = venv / "bin" / "python"
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-deps", "--no-index", str(wheel)], cwd=venv.parent)
    purelib = Path(run([str(python), "-c", "import sysconfig; "
                        "print(sysconfig.get_paths()['purelib'])"], cwd=venv.parent).strip())
    ours = dict.fromkeys([*site.getsitepackages(), sysconfig.get_paths()["purelib"]])
    (purelib / "_pyctrl_test_dependencies.pth").write_text("\n".join(ours) + "\n")
    return purelib
