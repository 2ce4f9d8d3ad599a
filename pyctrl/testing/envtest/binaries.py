"""Where envtest, ``pyctrl run`` and ``pyctrl envtest`` find etcd, kube-apiserver,
kube-controller-manager, kubectl and, for pods mode, kube-scheduler, kwok and kwok's Stage
files; and how ``pyctrl envtest install`` builds them.

Lookup (:func:`find_binaries`), first match wins:

1. ``KUBEBUILDER_ASSETS`` (the setup-envtest layout: one directory holding the binaries);
2. ``PYCTRL_CONTROLPLANE_DIR``;
3. :func:`install_dir`, the cache directory for the versions pinned in the Go module files
   this package ships (``gomod/``): ``${XDG_CACHE_HOME:-~/.cache}/pyctrl/controlplane/
   k8s-<version>_etcd-<version>``. While a build of it is in progress (its ``.build.lock``
   held) the lookup says so once on stderr and waits for it. In a source checkout with
   ``build=True`` an incomplete directory is built (:func:`install`);
4. the newest complete directory under :func:`cache_root` (binaries of other versions).

A set variable (1, 2) that lacks executable etcd and kube-apiserver, or nothing found, raises
:class:`BinariesNotFound` with a one-line message naming ``pyctrl envtest install``.
``kubectl`` falls back to the one on PATH when the directory has none. The optional binaries
are ``None`` when the directory lacks them (setup-envtest's layout has no kube-scheduler or
kwok); pods mode then says how to build them.

:func:`install` makes (3) complete: idempotent, it returns at once when it is; otherwise it
takes the directory's build lock (the one ``gomod/build.sh`` takes, so ``make controlplane``
and ``pyctrl envtest install`` exclude each other), waits (said once) while another process
holds it, and builds only what is still missing after the wait, with the given builder
(default :func:`go_build`: ``gomod/build.sh``, which needs Go on PATH).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BUILT", "GOMOD", "INSTALL_HINT", "Binaries", "BinariesNotFound", "Builder",
           "Versions", "cache_root", "find_binaries", "go_build", "install", "install_dir",
           "installed", "missing", "pinned_versions"]

_REQUIRED = ("etcd", "kube-apiserver")
#: What ``gomod/build.sh`` builds (without ``--node``); :func:`installed` wants all of them.
BUILT = (*_REQUIRED, "kube-controller-manager", "kube-scheduler", "kubectl", "kwok")
#: The Go module files and build script, shipped in the wheel.
GOMOD = Path(__file__).with_name("gomod")
_LOCK = ".build.lock"
INSTALL_HINT = "`pyctrl envtest install` builds them (needs Go on PATH)"

#: Builds the binaries into the given directory (see :func:`go_build`).
Builder = Callable[[Path], None]


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


@dataclass(frozen=True)
class Versions:
    """The upstream versions ``gomod/`` pins."""

    kubernetes: str
    etcd: str
    kwok: str


def _pinned(gomod: Path, module: str) -> str:
    # `require M vX` on one line, or `M vX` inside a require block (what build.sh's awk reads).
    found = re.search(rf"^(?:require\s+)?\s*{re.escape(module)}\s+(v\S+)", gomod.read_text(),
                      re.MULTILINE)
    if found is None:
        raise BinariesNotFound(f"{gomod} pins no version of {module}")
    return found.group(1)


def pinned_versions() -> Versions:
    """The versions in ``gomod/go.mod`` and ``gomod/kwok/go.mod``."""
    return Versions(kubernetes=_pinned(GOMOD / "go.mod", "k8s.io/kubernetes"),
                    etcd=_pinned(GOMOD / "go.mod", "go.etcd.io/etcd/server/v3"),
                    kwok=_pinned(GOMOD / "kwok" / "go.mod", "sigs.k8s.io/kwok"))


def cache_root() -> Path:
    """``${XDG_CACHE_HOME:-$HOME/.cache}/pyctrl/controlplane``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pyctrl" / "controlplane"


def install_dir() -> Path:
    """The cache directory of the pinned versions (``gomod/build.sh --dir`` prints the same)."""
    v = pinned_versions()
    return cache_root() / f"k8s-{v.kubernetes}_etcd-{v.etcd}"


def _complete(directory: Path) -> bool:
    return all(os.access(directory / name, os.X_OK) for name in _REQUIRED)


def missing(directory: Path) -> list[str]:
    """What of :data:`BUILT` is not executable in ``directory``, and ``kwok-stages`` when
    kwok's Stages are absent or from another kwok than the pinned one."""
    absent = [name for name in BUILT if not os.access(directory / name, os.X_OK)]
    try:
        kwok = (directory / "kwok.version").read_text().strip()
    except OSError:
        kwok = ""
    if not (directory / "kwok-stages").is_dir() or kwok != pinned_versions().kwok:
        absent.append("kwok-stages")
    return absent


def installed(directory: Path) -> bool:
    """``directory`` holds everything :data:`BUILT`, and kwok's Stages from the pinned kwok."""
    return not missing(directory)


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


def _explicit() -> Binaries | None:
    """The directory named by KUBEBUILDER_ASSETS or PYCTRL_CONTROLPLANE_DIR, if one is set."""
    for var in ("KUBEBUILDER_ASSETS", "PYCTRL_CONTROLPLANE_DIR"):
        value = os.environ.get(var)
        if value:
            if _complete(Path(value)):
                return _from_dir(Path(value))
            raise BinariesNotFound(f"{var}={value} does not hold executable "
                                   f"{' and '.join(_REQUIRED)}")
    return None


def _say(message: str) -> None:
    print(f"envtest: {message}", file=sys.stderr, flush=True)


@contextmanager
def _build_lock(directory: Path, say: Callable[[str], None], *, create: bool) -> Iterator[None]:
    """Hold ``directory``'s build lock, waiting (said once) while another process holds it.
    Without ``create``, a missing directory or lock file (no build ever began) is not
    waited for."""
    path = directory / _LOCK
    try:
        if create:
            directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDONLY | (os.O_CREAT if create else 0), 0o644)
    except FileNotFoundError:
        if create:
            raise BinariesNotFound(f"cannot create {path}") from None
        fd = -1
    except OSError as err:
        raise BinariesNotFound(f"cannot open {path}: {err.strerror or err}") from None
    if fd < 0:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"a control-plane build is in progress ({path} is locked); waiting for it")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def go_build(directory: Path) -> None:
    """Build the pinned binaries into ``directory`` with ``gomod/build.sh`` (Go on PATH; the
    caller holds the build lock). Progress goes to stderr."""
    if shutil.which("go") is None:
        raise BinariesNotFound(
            "building the control plane needs Go on PATH (https://go.dev/dl/), or set "
            "KUBEBUILDER_ASSETS to a directory of envtest binaries")
    v = pinned_versions()
    _say(f"building {', '.join(missing(directory))} (k8s {v.kubernetes}, etcd {v.etcd}, "
         f"kwok {v.kwok}) into {directory} with Go: minutes, once per version")
    script = GOMOD / "build.sh"
    env = {**os.environ, "PYCTRL_CONTROLPLANE_LOCKED": "1"}
    env.pop("KUBEBUILDER_ASSETS", None)
    done = subprocess.run(["bash", str(script)], check=False, stdout=subprocess.PIPE,
                          text=True, env=env)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0:
        raise BinariesNotFound(f"{script} failed with exit code {done.returncode} (its "
                               "output is above)")
    if not lines or Path(lines[-1]) != directory:
        raise BinariesNotFound(f"{script} built into {lines[-1] if lines else 'nothing'}, "
                               f"not {directory}")


def install(builder: Builder | None = None, *, say: Callable[[str], None] = _say) -> Path:
    """The directory of the pinned binaries, built first if they are missing (see module
    docstring); KUBEBUILDER_ASSETS or PYCTRL_CONTROLPLANE_DIR, when set, is returned as is."""
    explicit = _explicit()
    if explicit is not None:
        return explicit.directory
    out = install_dir()
    if installed(out):
        return out
    with _build_lock(out, say, create=True):
        if not installed(out):
            (builder or go_build)(out)
            if not installed(out):
                raise BinariesNotFound(f"the build left {out} incomplete (missing "
                                       f"{', '.join(missing(out))})")
    return out


def _checkout() -> bool:
    # pyctrl/testing/envtest/binaries.py -> repo root is four levels up in a checkout.
    return (Path(__file__).resolve().parents[3] / "hack" / "controlplane" / "build.sh").is_file()


def find_binaries(build: bool = True, *, say: Callable[[str], None] = _say) -> Binaries:
    """Locate (or, in a source checkout with ``build=True``, build) the binaries."""
    explicit = _explicit()
    if explicit is not None:
        return explicit
    out = install_dir()
    if not installed(out):
        if build and _checkout():
            install(say=say)
        else:
            with _build_lock(out, say, create=False):
                pass  # a build in progress ends before the lock is ours
    if _complete(out):
        return _from_dir(out)
    root = cache_root()
    candidates = sorted(
        (d for d in root.glob("*") if d.is_dir() and _complete(d)),
        key=lambda d: d.stat().st_mtime,
        reverse=True,
    )
    if candidates:
        return _from_dir(candidates[0])
    raise BinariesNotFound(f"no control-plane binaries in {root}: {INSTALL_HINT}, or set "
                           "KUBEBUILDER_ASSETS")
