"""A client call on another thread, for tests that act while it is blocked."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def run_in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Start ``fn`` on a new thread; the dict gets what it returns (``"value"``) or raises
    (``"error"``, any BaseException) once the thread has ended."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:
            out["error"] = exc

    t = threading.Thread(target=target, name="client-call")
    t.start()
    return t, out
