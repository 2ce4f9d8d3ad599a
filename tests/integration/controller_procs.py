"""Controller replicas as real processes, for the integration tests that kill and replace them.

Contract: :class:`ControllerProcs` starts ``python -m cronjob_controller`` processes against a
test's control plane and namespace (``--kubeconfig``, ``--namespace``, then the caller's
flags), each logging to ``<log_dir>/<name>.log`` unbuffered (a SIGKILL loses no line), with
the repository on ``PYTHONPATH``. ``procs`` maps names to :class:`Proc` in start order.
:meth:`holder` reads a Lease's holder identity (None: no Lease). :meth:`stop_all` stops every
process and records, in ``exit_codes``, the exit code of each one that was still running (a
graceful stop is 0). :meth:`logs` is the tail of every log, for assertion messages.
:func:`logged_identity` reads the leader-election identity a replica logs at start (json logs),
which maps a Lease holder to its process.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from pyctrl.errors import NotFound
from pyctrl.kube import LEASES, RESTClient
from pyctrl.testing.envtest import ControlPlane
from pyctrl.testing.envtest.process import Proc, spawn

__all__ = ["ROOT", "ControllerProcs", "logged_identity"]

ROOT = Path(__file__).resolve().parents[2]
STARTING = "starting cronjob controller"  # the start line that carries the identity


def logged_identity(proc: Proc) -> str | None:
    """The identity ``proc`` logged at start (``--log-format json``); None while it has not
    logged it yet. Fails the test (with its log's tail) if the process exited without it."""
    try:
        lines = proc.log_path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("event") == STARTING:
            return str(entry["identity"])
    assert proc.running(), f"{proc.name} exited:\n{proc.log_tail()}"
    return None


class ControllerProcs:
    """The cronjob_controller processes of one test (see the module docstring)."""

    def __init__(self, plane: ControlPlane, client: RESTClient, namespace: str,
                 log_dir: Path) -> None:
        self.plane, self.client, self.namespace, self.log_dir = plane, client, namespace, log_dir
        self.procs: dict[str, Proc] = {}
        self.exit_codes: dict[str, int | None] = {}

    def spawn(self, name: str, flags: list[str], env: dict[str, str] | None = None) -> Proc:
        argv = [sys.executable, "-m", "cronjob_controller", "--kubeconfig",
                self.plane.kubeconfig_path, "--namespace", self.namespace, *flags]
        proc = spawn(name, argv, self.log_dir / f"{name}.log",
                     env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1",
                          **(env or {})})
        self.procs[name] = proc
        return proc

    def holder(self, lease: str) -> str | None:
        try:
            obj = self.client.get(LEASES, lease, self.namespace)
        except NotFound:
            return None
        return (obj.get("spec") or {}).get("holderIdentity")

    def stop_all(self) -> dict[str, int | None]:
        for name, proc in self.procs.items():
            was_running = proc.running()
            proc.stop(timeout=20)
            if was_running:
                self.exit_codes[name] = proc.popen.returncode
        return self.exit_codes

    def logs(self, lines: int = 15) -> str:
        return "\n".join(f"--- {n}\n{p.log_tail(lines)}" for n, p in self.procs.items())
