"""Health and readiness checks, answered like the Kubernetes API server's probe endpoints.

Contract:

* A check is ``fn() -> str | None``: None means healthy, a string is the failure reason; a
  check that raises is a failure with the exception as reason.
* :class:`Checks` answers ``/healthz`` (or ``/readyz``) with 200 ``ok`` when every check
  passes, else 500 listing failures; ``?verbose`` lists every check as ``[+]name ok`` /
  ``[-]name failed: reason``; ``/<endpoint>/<name>`` runs one check (404 when unknown).
  :meth:`Checks.serve` answers ``(path, query)`` (the probe server routes to it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from pyctrl.serving.http import TEXT as _TEXT

__all__ = ["Check", "Checks"]

Check = Callable[[], str | None]


class Checks:
    """Named checks for one endpoint family (``healthz`` or ``readyz``)."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self._mu = threading.Lock()
        self._checks: dict[str, Check] = {}

    def add(self, name: str, fn: Check) -> None:
        with self._mu:
            if name in self._checks:
                raise ValueError(f"{self.endpoint} check {name!r} already registered")
            self._checks[name] = fn

    def names(self) -> list[str]:
        with self._mu:
            return list(self._checks)

    @staticmethod
    def _run(fn: Check) -> str | None:
        try:
            return fn()
        except Exception as err:
            return f"check raised {type(err).__name__}: {err}"

    def serve(self, path: str, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        """Answer ``/<endpoint>`` or ``/<endpoint>/<name>``."""
        with self._mu:
            checks = dict(self._checks)
        rest = path[len(self.endpoint) + 1:].strip("/")
        if rest:
            fn = checks.get(rest)
            if fn is None:
                return 404, _TEXT, f"no {self.endpoint} check named {rest!r}\n".encode()
            reason = self._run(fn)
            if reason is None:
                return 200, _TEXT, b"ok"
            return 500, _TEXT, f"[-]{rest} failed: {reason}\n".encode()
        lines: list[str] = []
        failed = False
        for name, fn in checks.items():
            reason = self._run(fn)
            if reason is None:
                lines.append(f"[+]{name} ok")
            else:
                failed = True
                lines.append(f"[-]{name} failed: {reason}")
        verbose = "verbose" in query
        if failed:
            lines.append(f"{self.endpoint} check failed")
            return 500, _TEXT, ("\n".join(lines) + "\n").encode()
        if verbose:
            lines.append(f"{self.endpoint} check passed")
            return 200, _TEXT, ("\n".join(lines) + "\n").encode()
        return 200, _TEXT, b"ok"
