"""A process-wide count of answers received from API servers.

Contract: :func:`note` is called by every pyctrl client (the REST client, and
:class:`pyctrl.testing.FakeClient` as its stand-in) when a request got an answer that shows the
server is serving: any HTTP status except 5xx and 429 (a 4xx such as 404 or 409 is an
answer; a refused connection, a timeout, a 503 or a 429 is not). :func:`count` reads the total.
The count only grows, by exactly one per :func:`note` from any thread (a lock: on a
free-threaded interpreter an unlocked ``+=`` could lose increments or, with a stale write,
move the count back); components compare two readings to learn whether the server answered
anything in between (:class:`pyctrl.availability.OutageGate` does).
"""

from __future__ import annotations

import threading

__all__ = ["count", "note"]

_answers = 0
_lock = threading.Lock()


def note() -> None:
    """Record one answer from a serving API server."""
    global _answers
    with _lock:
        _answers += 1


def count() -> int:
    """The number of answers recorded so far in this process."""
    return _answers
