"""OutageGate: pause a controller's workers while the API server is unavailable.

A reconcile that fails because the API server cannot answer (it is down, restarting or
shedding load) says nothing about its item, so it must not spend the item's exponential
backoff or the queue's shared token bucket: after an outage those would release the failed
keys at the bucket's rate (10 per second by default), long after the server is back. The
gate takes those failures instead.

Contract:

* :func:`is_unavailable` is the classification: :class:`~pyctrl.errors.Unreachable`
  (connection refused or reset, DNS), :class:`~pyctrl.errors.Timeout` (the client gave up),
  :class:`~pyctrl.errors.ServerTimeout` (504), :class:`~pyctrl.errors.TooManyRequests`
  (429) and a 503 :class:`~pyctrl.errors.ServerError`, plus the stdlib's
  ``ConnectionError``/``TimeoutError`` and urllib3's transport errors. Any other error
  (404, 409, 422, a 500, a bug) is the item's own.
* Whether the server answered is read from :mod:`pyctrl.kube.answers` (``answers``: a
  count of answers that grows; injectable). A reconcile that returns normally is not proof by
  itself: it may have read only the cache.
* ``failed(err, key)`` is called with a reconcile's exception. It answers True when the
  failure is the server's: the gate closes (if open) and the caller re-adds the key to the
  queue at once, with no rate limiting and no failure recorded against the key. While the
  gate is closed, or for ``startup_window`` seconds after it reopened, a 403/401 counts as the
  server's too: a restarted kube-apiserver refuses requests until its authorization caches
  are filled. A key whose server-side failure repeats while the gate is open and the server
  answered other requests since the key's previous failure is failing for its own reasons
  (an aggregated API down, one object's webhook): ``failed`` answers False and the caller
  rate-limits it as any error. Any other failure answers False; an API error (the server
  answered) opens the gate.
* ``succeeded(key)`` is called after every reconcile that did not raise: the gate opens when
  the server answered anything since it closed; otherwise the next probe may go at once (this
  one told nothing).
* ``admit(stop)`` is called by a worker before each reconcile. While the gate is open it
  returns True at once (no lock taken). While it is closed it blocks; one worker at a time
  is let through as a probe, the first ``initial`` seconds after the close, then after
  delays doubling up to ``maximum`` while probes keep failing on the server. It returns False
  only once ``stop`` is set (:meth:`release` wakes waiters).
* Time comes from the injected Clock (monotonic); thread-safe. Memory: one entry per key
  whose last failure was the server's (bounded by the number of keys).

"The API server is restarting" is defined here once, for the gate and for the cache's
Reflector: :data:`RESTART_BACKOFF` (the retry delays while a restarting server refuses
connections: 0.25 s doubling to 2 s), :func:`is_refused` (the connection was refused or
reset) and :class:`StartupWindow` (for :data:`STARTUP_WINDOW` seconds after that, a 401/403
is the restarted server's, whose authorization caches are not filled yet, not the caller's).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable

import structlog
from urllib3.exceptions import HTTPError

from pyctrl._errorlog import describe
from pyctrl.clock import Clock, RealClock
from pyctrl.errors import (
    ApiError,
    Forbidden,
    NotLeader,
    ServerError,
    ServerTimeout,
    Timeout,
    TooManyRequests,
    Unauthorized,
    Unreachable,
)
from pyctrl.kube.answers import count as answer_count

__all__ = ["RESTART_BACKOFF", "STARTUP_WINDOW", "OutageGate", "StartupWindow", "is_refused",
           "is_startup_refusal", "is_unavailable"]

log = structlog.get_logger(__name__)

_SERVER_SIDE: tuple[type[BaseException], ...] = (
    Unreachable, Timeout, ServerTimeout, TooManyRequests, ConnectionError, TimeoutError,
)


#: (initial, maximum) seconds between retries while a restarting server refuses connections:
#: retrying a refused connection costs the server nothing.
RESTART_BACKOFF = (0.25, 2.0)
#: Seconds after a restart (a refused connection, or the gate reopening) during which a
#: 401/403 is the server's: its authorization caches are still being filled.
STARTUP_WINDOW = 30.0


def is_refused(err: BaseException) -> bool:
    """Whether the connection was refused or reset (the server is down or restarting)."""
    return isinstance(err, Unreachable | ConnectionError)


def is_startup_refusal(err: BaseException) -> bool:
    """Whether ``err`` is what a just-restarted server answers before it can authorize."""
    return isinstance(err, Forbidden | Unauthorized)


class StartupWindow:
    """The :data:`STARTUP_WINDOW` after the last :meth:`start` (module docstring)."""

    def __init__(self, clock: Clock, seconds: float = STARTUP_WINDOW) -> None:
        self._clock = clock
        self._seconds = seconds
        self._started: float | None = None

    def start(self) -> None:
        """The server was seen restarting (or answering again) now."""
        self._started = self._clock.monotonic()

    def covers(self, err: BaseException) -> bool:
        """Whether ``err`` is a startup refusal within the window of the last start."""
        return (is_startup_refusal(err) and self._started is not None
                and self._clock.monotonic() - self._started < self._seconds)


def is_unavailable(err: BaseException) -> bool:
    """Whether ``err`` means the API server could not answer (see module docstring)."""
    if isinstance(err, _SERVER_SIDE):
        return True
    if isinstance(err, ServerError):
        return err.code == 503
    return isinstance(err, HTTPError) and not isinstance(err, ApiError)


class OutageGate:
    """Holds a controller's workers while the API server is unavailable (module docstring)."""

    def __init__(self, name: str = "", clock: Clock | None = None, *,
                 initial: float = RESTART_BACKOFF[0], maximum: float = RESTART_BACKOFF[1],
                 startup_window: float = STARTUP_WINDOW,
                 answers: Callable[[], int] = answer_count) -> None:
        if not 0 < initial <= maximum or startup_window < 0:
            raise ValueError("need 0 < initial <= maximum and startup_window >= 0")
        self.name = name
        self._clock: Clock = clock or RealClock()
        self._initial = initial
        self._max = maximum
        self._startup = StartupWindow(self._clock, startup_window)
        self._answers = answers
        self._cond = threading.Condition()
        self._closed = False  # read without the lock on the fast path
        self._prober: int | None = None  # the thread probing while closed
        self._delay = initial
        self._next_probe = 0.0
        self._closed_at = 0.0
        self._answers_at_close = 0
        self._failed_at: dict[Hashable, int] = {}  # key -> answers() at its last failure
        self._requeued = 0  # keys requeued through the gate during this outage

    @property
    def closed(self) -> bool:
        """Whether workers are held (an outage is in progress)."""
        return self._closed

    @property
    def next_probe_at(self) -> float:
        """The Clock's monotonic time from which the next probe may go (while closed)."""
        return self._next_probe

    def _startup_refusal(self, err: BaseException) -> bool:
        return (is_startup_refusal(err) and self._closed) or self._startup.covers(err)

    def failed(self, err: BaseException, key: Hashable) -> bool:
        """Record a failed reconcile of ``key``; True when it was the server's failure and
        the caller should re-add the key without rate limiting (module docstring)."""
        with self._cond:
            fenced = isinstance(err, NotLeader)
            if not (fenced or is_unavailable(err) or self._startup_refusal(err)):
                self._failed_at.pop(key, None)
                if isinstance(err, ApiError):
                    self._open()
                self._probe_done()
                return False
            answered = self._answers()
            before = self._failed_at.get(key)
            if before is not None and answered > before and not self._closed and not fenced:
                del self._failed_at[key]  # others got answers since: its own problem
                return False
            self._failed_at[key] = answered
            now = self._clock.monotonic()
            if not self._closed:
                self._closed, self._closed_at, self._answers_at_close = True, now, answered
                self._delay, self._next_probe, self._requeued = (
                    self._initial, now + self._initial, 0)
                log.warning("the API server is unavailable; pausing workers until it answers",
                            controller=self.name, **describe(err))
            elif self._is_prober():
                self._next_probe = now + self._delay
                self._delay = min(self._delay * 2, self._max)
            self._requeued += 1
            self._probe_done()
            return True

    def succeeded(self, key: Hashable) -> None:
        """Record a reconcile of ``key`` that did not raise (module docstring)."""
        if not self._closed and not self._failed_at:
            return
        with self._cond:
            self._failed_at.pop(key, None)
            if self._closed:
                if self._answers() > self._answers_at_close:
                    self._open()
                elif self._is_prober():
                    self._next_probe = self._clock.monotonic()
            self._probe_done()

    def _open(self) -> None:
        """Reopen the gate (caller holds the lock)."""
        if not self._closed:
            return
        now = self._clock.monotonic()
        self._closed = False
        self._startup.start()
        log.info("the API server answers again; resuming workers", controller=self.name,
                 paused_seconds=round(now - self._closed_at, 3), requeued=self._requeued)

    def _is_prober(self) -> bool:
        return self._prober == threading.get_ident()

    def _probe_done(self) -> None:
        """End the calling thread's probe, if it was probing, and wake the waiters (caller
        holds the lock)."""
        if self._is_prober() or not self._closed:
            self._prober = None
        self._cond.notify_all()

    def admit(self, stop: threading.Event) -> bool:
        """Wait until this worker may reconcile (module docstring); False once ``stop``."""
        if not self._closed:
            return not stop.is_set()
        with self._cond:
            while self._closed and not stop.is_set():
                now = self._clock.monotonic()
                if self._prober is None and now >= self._next_probe:
                    self._prober = threading.get_ident()
                    return True
                wait = self._max if self._prober is not None else self._next_probe - now
                self._clock.wait(self._cond, max(0.0, min(wait, self._max)))
            return not stop.is_set()

    def release(self) -> None:
        """Wake every waiting worker (call after setting ``stop``)."""
        with self._cond:
            self._cond.notify_all()
