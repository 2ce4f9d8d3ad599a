"""Where envtest finds etcd, kube-apiserver, kube-controller-manager, kubectl and, for pods
mode, kube-scheduler, kwok and kwok's Stage files.

Contract, first match wins:

1. ``KUBEBUILDER_ASSETS`` (the setup-envtest layout: one directory holding the binaries);
2. ``PYCTRL_CONTROLPLANE_DIR``;
3. the newest complete directory under ``${XDG_CACHE_HOME:-~/.cache}/pyctrl/controlplane/``;
4. in a source checkout, ``hack/controlplane/build.sh`` is run to build them into (3).

:func:`find_binaries` raises :class:`BinariesNotFound` with instructions when none works.
``kubectl`` falls back to the one on PATH when the directory has none. The optional binaries
are ``None`` when the directory lacks them (setup-envtest's layout has no kube-scheduler or
kwok); pods mode then says how to build them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Binaries", "BinariesNotFound", "cache_root", "find_binaries"]

_REQUIRED = ("etcd", "kube-apiserver")


class BinariesNotFound(RuntimeError):
    """No usable control-plane binaries were found or could be built."""


@dataclass(frozen=True)
class Binaries:
    """Absolute paths of the control-plane executables."""

    directory: Path
    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path | None
    kubectl: Path | None
    kube_scheduler: Path | None = None
    kwok: Path | None = None
    #: A directory of kwok Stage files (YAML), each passed to kwok with ``--config``.
    kwok_stages: Path | None = None


def cache_root() -> Path:
    """``${XDG_CACHE_HOME:-$HOME/.cache}/pyctrl/controlplane``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pyctrl" / "controlplane"


def _complete(directory: Path) -> bool:
    return all(os.access(directory / name, os.X_OK) for name in _REQUIRED)


def _executable(path: Path) -> Path | None:
    return path if os.access(path, os.X_OK) else None


def _from_dir(directory: Path) -> Binaries:
    on_path = shutil.which("kubectl")
    stages = directory / "kwok-stages"
    return Binaries(
        directory=directory,
        etcd=directory / "etcd",
        kube_apiserver=directory / "kube-apiserver",
        kube_controller_manager=_executable(directory / "kube-controller-manager"),
        kubectl=_executable(directory / "kubectl") or (Path(on_path) if on_path else None),
        kube_scheduler=_executable(directory / "kube-scheduler"),
        kwok=_executable(directory / "kwok"),
        kwok_stages=stages if stages.is_dir() else None,
    )


def _build_script() -> Path | None:
    # pyctrl/testing/envtest/binaries.py -> repo root is four levels up in a checkout.
    script = Path(__file__).resolve().parents[3] / "hack" / "controlplane" / "build.sh"
    return script if script.is_file() else None


def find_binaries(build: bool = True) -> Binaries:
    """Locate (or, in a source checkout with ``build=True``, build) the binaries."""
    for var in ("KUBEBUILDER_ASSETS", "PYCTRL_CONTROLPLANE_DIR"):
        value = os.environ.get(var)
        if value:
            directory = Path(value)
            if _complete(directory):
                return _from_dir(directory)
            raise BinariesNotFound(f"{var}={value} does not hold executable {_REQUIRED}")
    script = _build_script()
    if build and script is not None:
        # The script is idempotent and fast when everything is cached; running it also picks
        # up a version bump in go.mod instead of silently using an older cached directory.
        out = subprocess.run(
            ["bash", str(script)], check=False, stdout=subprocess.PIPE, text=True
        )
        if out.returncode == 0 and out.stdout.strip():
            directory = Path(out.stdout.strip().splitlines()[-1])
            if _complete(directory):
                return _from_dir(directory)
        raise BinariesNotFound(f"{script} failed with exit code {out.returncode}")
    root = cache_root()
    candidates = sorted(
        (d for d in root.glob("*") if d.is_dir() and _complete(d)),
        key=lambda d: d.stat().st_mtime,
        reverse=True,
    )
    if candidates:
        return _from_dir(candidates[0])
    raise BinariesNotFound(
        "no control-plane binaries: set KUBEBUILDER_ASSETS, or run hack/controlplane/build.sh "
        f"from a pyctrl checkout to build them into {root}"
    )
