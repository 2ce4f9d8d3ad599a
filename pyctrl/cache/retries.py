"""How a Reflector waits, and what it logs, after a failed list-and-watch or watch.

Contract:

* :func:`retryable` tells a failure worth re-watching from the same resourceVersion after a
  backoff (the server unreachable or restarting, a 5xx, a transport error: the cache is
  still valid) from one that needs a new LIST (any other API error).
* :class:`Retries` holds two exponential backoffs on the injected clock: the ordinary one
  (``initial`` doubling to ``maximum``, ``jitter``, reset after ``reset_after`` healthy
  seconds) and the restart backoff (:data:`pyctrl.availability.RESTART_BACKOFF`, jitter at
  most 0.5), used while the server refuses connections or, within its startup window
  (:class:`pyctrl.availability.StartupWindow`, opened by the first refused connection),
  answers 401/403. :meth:`Retries.delay_after` is the wait before retrying after an error;
  :meth:`Retries.after_clean_end` the wait after a list-and-watch that returned (the
  ordinary backoff's next step).
* :meth:`Retries.log_failure` logs a failed list-and-watch at warning on the Reflector's
  logger: a 404 (NotFound: the resource is not served) names the resource's ``group``,
  ``version`` and ``resource`` when the lister knows its :class:`~pyctrl.kube.Resource` and
  says to install its CustomResourceDefinition; anything else goes through
  :class:`pyctrl._errorlog.ErrorLog` (a few lines per error per 10 s, not one per retry), as
  does :meth:`Retries.log_watch_failure` (at info). Every line carries ``reflector`` and the
  delay before the retry.
"""

from __future__ import annotations

import random

from structlog.stdlib import BoundLogger

from pyctrl._errorlog import ErrorLog
from pyctrl.availability import RESTART_BACKOFF, StartupWindow, is_refused, is_unavailable
from pyctrl.cache.backoff import ExponentialBackoffManager
from pyctrl.clock import Clock
from pyctrl.errors import ApiError, NotFound, ServerError
from pyctrl.kube.resource import Resource

__all__ = ["Retries", "retryable"]

# The jitter of the restart backoff: while the server refuses connections or, within its
# startup window, answers 401/403.
_RESTART_JITTER = 0.5


def retryable(err: BaseException) -> bool:
    """Whether ``err`` is worth re-watching from the same version after a backoff."""
    # Unreachable (connection refused or reset: an apiserver restart) leaves our cache valid;
    # re-watch from where we were instead of paying for a relist.
    if is_unavailable(err) or isinstance(err, ServerError | OSError):
        return True
    return not isinstance(err, ApiError)  # other transport-level failures


class Retries:
    """A Reflector's backoffs and failure lines (see module docstring)."""

    def __init__(self, clock: Clock, log: BoundLogger, name: str, *, initial: float,
                 maximum: float, reset_after: float, jitter: float,
                 rand: random.Random) -> None:
        self._log = log
        self._name = name
        self._errors = ErrorLog(log, clock)
        self._backoff = ExponentialBackoffManager(
            clock, initial=initial, maximum=maximum, jitter=jitter, reset_after=reset_after,
            rand=rand.random)
        self._restart_backoff = ExponentialBackoffManager(
            clock, initial=RESTART_BACKOFF[0], maximum=RESTART_BACKOFF[1],
            jitter=min(_RESTART_JITTER, jitter), reset_after=reset_after, rand=rand.random)
        self._startup = StartupWindow(clock)

    def delay_after(self, err: Exception) -> float:
        """The wait before retrying after ``err`` (module docstring)."""
        if is_refused(err):
            self._startup.start()
        elif not self._startup.covers(err):
            return self._backoff.next()
        return self._restart_backoff.next()

    def after_clean_end(self) -> float:
        """The wait after a list-and-watch that returned without an error."""
        return self._backoff.next()

    def log_failure(self, err: Exception, delay: float, lister: object) -> None:
        """Log a failed list-and-watch of ``lister`` (module docstring)."""
        if isinstance(err, NotFound):
            resource = getattr(lister, "resource", None)
            what: dict[str, str] = {}
            if isinstance(resource, Resource):
                what = {"group": resource.group or "core", "version": resource.version,
                        "resource": resource.plural}
            self._log.warning("resource not found on the API server: is its "
                              "CustomResourceDefinition installed (or the group/version/"
                              "resource misspelled)?", reflector=self._name, **what,
                              retry_in=round(delay, 3), error=str(err))
            return
        self._errors.failure("list and watch failed", err, level="warning",
                             reflector=self._name, retry_in=round(delay, 3))

    def log_watch_failure(self, err: Exception, delay: float) -> None:
        """Log a failed watch about to be retried from the same version."""
        self._errors.failure("watch failed, backing off", err, level="info",
                             reflector=self._name, delay=round(delay, 3))
