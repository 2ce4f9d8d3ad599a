"""A write guard carried with the call: checked by the REST client just before the send.

Contract:

* :func:`guarded(check)` is a context manager that installs ``check`` (a callable that
  raises to refuse) for the current thread/context; guards nest (the innermost wins) and are
  removed on exit.
* :func:`check_write` runs the installed guard, if any. :class:`pyctrl.kube.RESTClient` calls
  it for every mutating request *after* its client-side rate limiter admitted the request and
  immediately before the bytes go to the socket (and again before each 429 retry), so a
  caller that checked once before a long limiter wait, or a process frozen while waiting,
  is refused then instead of writing on stale authority.
* Reads never consult the guard.

This is how :class:`pyctrl.kube.FencedClient` closes the window between its own check and the
wrapped client's send; a context variable keeps the Client protocol unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["check_write", "guarded"]

_GUARD: ContextVar[Callable[[], None] | None] = ContextVar("pyctrl_write_guard", default=None)


@contextmanager
def guarded(check: Callable[[], None]) -> Iterator[None]:
    """Install ``check`` as the write guard for calls made inside the block."""
    token = _GUARD.set(check)
    try:
        yield
    finally:
        _GUARD.reset(token)


def check_write() -> None:
    """Run the installed guard (raises to refuse the write); no guard, no check."""
    guard = _GUARD.get()
    if guard is not None:
        guard()
