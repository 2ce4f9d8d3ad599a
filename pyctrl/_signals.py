"""Signal handling for a controller process: the first SIGTERM/SIGINT stops it gracefully.

Contract: :func:`install_signal_handlers` (call from the main thread) makes the first
SIGTERM/SIGINT set ``stop`` (graceful shutdown); a second one exits the process at once with
status 1. It returns a function that restores the previous handlers.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

import structlog

__all__ = ["install_signal_handlers"]

log = structlog.get_logger("pyctrl.manager")


def install_signal_handlers(stop: threading.Event) -> Callable[[], None]:
    """SIGTERM/SIGINT set ``stop``; a second signal calls ``os._exit(1)``.

    Call from the main thread. Returns a function that restores the previous handlers.
    """
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            os._exit(1)
        log.info("signal received; shutting down gracefully (again to force)", signal=signum)
        stop.set()

    for sig in previous:
        signal.signal(sig, handle)

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore
