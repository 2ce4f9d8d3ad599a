"""Build the Go anchor programs under ``bench/anchors`` (one Go module, one command per folder).

Contract: :func:`build_anchor` returns ``bench/anchors/bin/<name>``, running
``go build ./<name>`` in the module (modules from the Go module proxy, cached in the usual Go
module cache) only when the binary is missing or older than any of the command's ``.go`` files,
``go.mod`` or ``go.sum``; it returns None when there is no ``go`` on PATH and no usable binary.
A failed build raises :class:`subprocess.CalledProcessError`. ``bench/anchors/bin`` is
git-ignored. The build inherits the caller's niceness (``nice -n 19 python -m bench ...``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["ANCHORS", "anchor_binary", "build_anchor"]

ANCHORS = Path(__file__).resolve().parent / "anchors"


def anchor_binary(name: str) -> Path:
    """Where the built command ``name`` lives."""
    return ANCHORS / "bin" / name


def build_anchor(name: str) -> Path | None:
    """Build (or reuse) ``bench/anchors/bin/<name>``; None when Go is not available."""
    binary = anchor_binary(name)
    sources = [*(ANCHORS / name).glob("*.go"), ANCHORS / "go.mod", ANCHORS / "go.sum"]
    if binary.exists() and binary.stat().st_mtime >= max(p.stat().st_mtime for p in sources):
        return binary
    go = shutil.which("go")
    if go is None:
        return None
    binary.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GOFLAGS": "-buildvcs=false"}
    subprocess.run([go, "build", "-o", str(binary), f"./{name}"], cwd=ANCHORS, env=env,
                   check=True)
    return binary
