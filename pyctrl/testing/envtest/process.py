"""Child processes that die with their parent and stop exactly once.

Contract:

* :func:`spawn` starts a process in its own session with output to a log file. On Linux it
  asks the kernel (``PR_SET_PDEATHSIG``) to SIGKILL the child when the thread that spawned it
  dies, so a crashed or SIGKILLed test run leaves no etcd or apiserver behind. (That is why
  envtest should be started from a long-lived thread, normally the main thread.)
* :meth:`Proc.stop` sends SIGTERM to the child's process group, waits, then SIGKILLs, and
  returns only when every member of the group is gone; it only ever signals the process
  group it created and is idempotent.
* :func:`reap_stale_dirs` removes temp directories left by earlier runs whose owning process
  is gone (the one thing PDEATHSIG cannot clean up).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from pyctrl.clock import RealClock

__all__ = ["Proc", "pid_alive", "reap_stale_dirs", "spawn"]

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Proc:
    """A started child process and its log file."""

    def __init__(self, name: str, popen: subprocess.Popen[bytes], log_path: Path) -> None:
        self.name = name
        self.popen = popen
        self.log_path = log_path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def running(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process group, then SIGKILL after ``timeout`` seconds.

        Returns once the whole group is gone, not only the child: a grandchild that got the
        SIGTERM with it can still be exiting (holding a port or a data dir) when the child has
        been reaped, most visibly on a loaded machine.
        """
        pgid = self.popen.pid
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pgid, signal.SIGKILL)
                self.popen.wait(timeout)
        if not _group_gone(pgid, timeout):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            _group_gone(pgid, timeout)

    def kill(self) -> None:
        """SIGKILL the process group at once (simulates a crash); returns when it is gone."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait()
        _group_gone(self.popen.pid, 10.0)


def _group_gone(pgid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` s until process group ``pgid`` has no member; True if so."""
    clock = RealClock()  # an external process group: real time by nature
    deadline = clock.monotonic() + timeout
    pause = threading.Event()
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # the pgid now belongs to someone else's processes
            return True
        if clock.monotonic() >= deadline:
            return False
        pause.wait(0.01)  # polling an external process group; no event to wait on


def spawn(
    name: str, argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None
) -> Proc:
    """Start ``argv`` with stdout/stderr appended to ``log_path``."""
    log = log_path.open("ab")
    try:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - prctl only; no locks touched
            env=env,
        )
    finally:
        log.close()
    return Proc(name, popen, log_path)


def pid_alive(pid: int) -> bool:
    """True if a process with ``pid`` exists (signal 0 probe)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_stale_dirs(parent: Path, prefix: str) -> list[Path]:
    """Delete ``parent/<prefix><pid>-*`` directories whose ``pid`` no longer runs."""
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    for path in parent.glob(f"{prefix}*"):
        rest = path.name[len(prefix):]
        pid_text = rest.split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        if not pid_alive(int(pid_text)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
