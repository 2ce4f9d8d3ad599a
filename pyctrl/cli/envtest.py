"""``python -m pyctrl envtest install|list|path``: the control-plane binaries (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok) that
:mod:`pyctrl.testing.envtest` and ``pyctrl run`` start, for a pip-installed pyctrl.

Contract (the lookup and the build are :mod:`pyctrl.testing.envtest.binaries`):

* ``install`` builds the versions pinned in the Go module files inside the package, from the
  Go module proxy, into the per-version cache directory; Go on PATH is the one requirement.
  It is idempotent (returns at once when they are there), waits for a build in progress
  (said once on stderr) and then uses it, and prints the directory on stdout.
  ``KUBEBUILDER_ASSETS`` holding etcd and kube-apiserver is printed as is.
* ``path`` prints the directory the lookup finds, or one line on stderr and exit 2.
* ``list`` prints each directory under the cache (its versions, whether it is complete and
  pinned by this pyctrl) and ``KUBEBUILDER_ASSETS`` when set.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path

from pyctrl.cli import UsageError

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser(
        "install", help="build them into the cache unless there (needs Go on PATH); print "
        "the directory",
        description="Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, "
        "kubectl and kwok from the Go module proxy into the cache, unless they are there "
        "or a build in progress makes them (waited for); print the directory. Needs Go on "
        "PATH (https://go.dev/dl/); the first build takes minutes.")
    actions.add_parser("path", help="print the directory of the binaries (exit 2 if none)",
                       description="Print the directory pyctrl.testing.envtest and `pyctrl "
                       "run` take the binaries from; exit 2 if there is none.")
    actions.add_parser("list", help="show the installed versions and where they are",
                       description="Show each directory of binaries in the cache (versions, "
                       "complete or not) and KUBEBUILDER_ASSETS if set.")


def _versions(directory: Path) -> str:
    """``k8s vX etcd vY kwok vZ`` from the directory's name and its kwok.version."""
    name = directory.name
    parts = dict(p.split("-", 1) for p in name.split("_") if "-" in p)
    with contextlib.suppress(OSError):
        parts["kwok"] = (directory / "kwok.version").read_text().strip()
    return "  ".join(f"{k} {parts[k]}" for k in ("k8s", "etcd", "kwok") if k in parts) or name


def _list() -> int:
    from pyctrl.testing.envtest.binaries import cache_root, install_dir, missing, pinned_versions

    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets:
        print(f"KUBEBUILDER_ASSETS  {assets}  (used first)")
    root, pinned = cache_root(), install_dir()
    dirs = sorted(d for d in root.glob("*") if d.is_dir())
    for d in dirs:
        absent = missing(d)
        state = f"incomplete: no {', '.join(absent)}" if absent else "complete"
        pins = "; pinned by this pyctrl" if d == pinned else ""
        print(f"{_versions(d)}  {d}  ({state}{pins})")
    if not dirs:
        v = pinned_versions()
        print(f"nothing installed in {root}; `pyctrl envtest install` builds k8s "
              f"{v.kubernetes}, etcd {v.etcd}, kwok {v.kwok} there (needs Go on PATH)")
    return 0


def run(args: argparse.Namespace) -> int:
    from pyctrl.testing.envtest.binaries import BinariesNotFound, find_binaries, install

    try:
        if args.action == "install":
            print(install())
        elif args.action == "path":
            print(find_binaries(build=False).directory)
        else:
            return _list()
    except BinariesNotFound as err:
        raise UsageError(str(err)) from None
    except KeyboardInterrupt:  # Ctrl-C while building or waiting for a build
        return 130
    return 0
