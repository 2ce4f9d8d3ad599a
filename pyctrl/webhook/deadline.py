"""The time left to answer the admission review a handler is deciding.

Contract: :class:`~pyctrl.webhook.WebhookServer` runs every handler inside
:func:`review_deadline` with the monotonic time by which its answer must be written: the
moment the whole request was read plus the shorter of the API server's ``timeout`` query
parameter (the API server sends its ``timeoutSeconds`` with every call, e.g.
``?timeout=5s``) and the handler's :class:`~pyctrl.webhook.Admission` ``timeout_seconds``,
less :data:`ANSWER_MARGIN` for writing the answer. :func:`remaining` is the seconds left
(possibly negative) for the review this thread is deciding, or None outside a review or when
neither timeout is known. A handler that waits on anything (an API call) bounds the wait by
it, so its answer arrives before the API server gives up (with ``failurePolicy: Fail`` a
late answer is a refused write); the time a request waited for a worker counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pyctrl.clock import RealClock

__all__ = ["ANSWER_MARGIN", "remaining", "review_deadline"]

ANSWER_MARGIN = 0.25  # seconds kept for serializing and writing the answer
_REAL = RealClock()
_deadline: ContextVar[float | None] = ContextVar("pyctrl_webhook_deadline", default=None)


def remaining() -> float | None:
    """Seconds left to answer the review being decided here (see module docstring)."""
    at = _deadline.get()
    return None if at is None else at - _REAL.monotonic()


@contextmanager
def review_deadline(at: float | None) -> Iterator[None]:
    """Run the body with ``at`` (monotonic seconds, None: no deadline) as the deadline."""
    token = _deadline.set(at)
    try:
        yield
    finally:
        _deadline.reset(token)
