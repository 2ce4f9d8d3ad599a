"""Failure logging that stays readable (and small) while the API server is down.

Contract:

* :func:`classify` sorts an exception into ``"expected"`` or ``"unexpected"``. Expected are
  the answers and transport failures a controller meets in normal operation and can do
  nothing about but retry: every :class:`pyctrl.errors.ApiError` (connection refused or
  reset and DNS failures arrive as ``Unreachable``, client timeouts as ``Timeout``, and 404,
  409, 410, 429, 5xx as their typed errors), :class:`pyctrl.errors.NotLeader`, the stdlib's
  connection errors and timeouts (``ConnectionError``, ``TimeoutError``) and urllib3's
  ``HTTPError`` family (a watch stream cut mid-answer). Everything else is unexpected: a bug,
  or something the code did not plan for.
* :meth:`ErrorLog.failure` logs one failure. An expected one is one line, never a
  traceback, with ``error`` (class name), ``status`` (HTTP code, 0 without an answer),
  ``reason`` and ``message``. An unexpected one carries its traceback at most once per
  ``traceback_interval`` (60 s) per *signature*, and otherwise is one line like an expected
  one plus ``at`` (file:line where it was raised).
* A signature is (event, error class, status for an expected error or the raise location for
  an unexpected one); the key or object involved is not part of it. Per signature at most
  ``burst`` one-line entries are written per ``interval`` (10 s; zap's sampler, which
  controller-runtime's production logger uses, works the same way): the rest are counted
  and the next line written for that signature carries ``suppressed=N`` (how many were not
  written since the previous line). A traceback line is written even when the one-line
  budget is spent (it is bounded by its own interval), and carries the count too. So an
  outage of any length costs a handful of lines per signature per interval, and the cause
  stays named in each of them.
* :meth:`ErrorLog.event` logs one occurrence of something that is not an exception (a
  refused request, a bad input) under the same budget, its signature (event, ``key``): a
  flood of them costs ``burst`` lines per interval, each carrying ``suppressed=N``.
* Time comes from the injected :class:`pyctrl.clock.Clock` (monotonic). Thread-safe; the
  number of signatures kept is bounded (``max_signatures``: the least recently seen is
  forgotten first).
"""

from __future__ import annotations

import threading
import traceback
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import structlog
from urllib3.exceptions import HTTPError

from pyctrl.clock import Clock, RealClock
from pyctrl.errors import ApiError, NotLeader

__all__ = ["ErrorLog", "classify", "describe"]

Kind = Literal["expected", "unexpected"]
Level = Literal["debug", "info", "warning", "error"]

_EXPECTED: tuple[type[BaseException], ...] = (
    ApiError, NotLeader, ConnectionError, TimeoutError, HTTPError,
)
_MAX_MESSAGE = 500  # an error message is one line, not a dump of a response body


class _Logger(Protocol):
    def debug(self, event: str, *args: Any, **kw: Any) -> Any: ...
    def info(self, event: str, *args: Any, **kw: Any) -> Any: ...
    def warning(self, event: str, *args: Any, **kw: Any) -> Any: ...
    def error(self, event: str, *args: Any, **kw: Any) -> Any: ...


def classify(err: BaseException) -> Kind:
    """``"expected"`` for API answers and transport failures, ``"unexpected"`` otherwise."""
    return "expected" if isinstance(err, _EXPECTED) else "unexpected"


def describe(err: BaseException) -> dict[str, Any]:
    """The fields an error's log line carries: ``error``, ``status``, ``reason``, ``message``."""
    if isinstance(err, ApiError):
        message, status, reason = err.message, err.code, err.reason
    else:
        message, status, reason = str(err) or repr(err), 0, ""
    if len(message) > _MAX_MESSAGE:
        message = message[:_MAX_MESSAGE] + "..."
    return {"error": type(err).__name__, "status": status, "reason": reason,
            "message": message}


def _raised_at(err: BaseException) -> tuple[str, str]:
    """(full location for the signature, short location for the line) of the innermost frame."""
    frames = traceback.extract_tb(err.__traceback__) if err.__traceback__ else []
    if not frames:
        return "?", "?"
    frame = frames[-1]
    short = frame.filename.replace("\\", "/").rsplit("/", 2)
    return (f"{frame.filename}:{frame.lineno}",
            f"{'/'.join(short[-2:])}:{frame.lineno} in {frame.name}")


@dataclass
class _Seen:
    window_start: float
    lines_in_window: int = 0
    suppressed: int = 0
    last_traceback: float | None = None


class ErrorLog:
    """Logs failures of one component through ``logger`` (see the module docstring)."""

    def __init__(self, logger: _Logger | None = None, clock: Clock | None = None, *,
                 burst: int = 5, interval: float = 10.0, traceback_interval: float = 60.0,
                 max_signatures: int = 1024) -> None:
        if burst < 1:
            raise ValueError("burst must be >= 1")
        if interval <= 0 or traceback_interval <= 0:
            raise ValueError("interval and traceback_interval must be > 0")
        if max_signatures < 1:
            raise ValueError("max_signatures must be >= 1")
        self._log: _Logger = logger if logger is not None else structlog.get_logger(__name__)
        self._clock: Clock = clock if clock is not None else RealClock()
        self._burst, self._interval = burst, interval
        self._traceback_interval = traceback_interval
        self._max = max_signatures
        self._mu = threading.Lock()
        self._seen: OrderedDict[tuple[str, str, str], _Seen] = OrderedDict()

    def failure(self, event: str, err: BaseException, *, level: Level = "error",
                **fields: Any) -> None:
        """Log ``err`` under ``event`` at ``level`` with ``fields``; maybe not at all."""
        kind = classify(err)
        info = describe(err)
        if kind == "expected":
            where, at = str(info["status"]), ""
        else:
            where, at = _raised_at(err)
        traceback_due, write, suppressed = self._decide(
            (event, info["error"], where), unexpected=kind == "unexpected")
        if not write:
            return
        line = {**fields, **info}
        if at:
            line["at"] = at
        if suppressed:
            line["suppressed"] = suppressed
        emit = getattr(self._log, level)
        if traceback_due:
            emit(event, exc_info=err, **line)
        else:
            emit(event, **line)

    def event(self, event: str, *, key: str = "", level: Level = "info",
              **fields: Any) -> None:
        """Log ``event`` at ``level`` with ``fields``, sampled per (event, ``key``)."""
        _, write, suppressed = self._decide((event, "", key), unexpected=False)
        if not write:
            return
        if suppressed:
            fields["suppressed"] = suppressed
        getattr(self._log, level)(event, **fields)

    def _decide(self, sig: tuple[str, str, str], *, unexpected: bool) -> tuple[bool, bool, int]:
        """(with traceback, write a line at all, suppressed count to report) for one failure."""
        now = self._clock.monotonic()
        with self._mu:
            seen = self._seen.get(sig)
            if seen is None:
                seen = self._seen[sig] = _Seen(window_start=now)
                while len(self._seen) > self._max:
                    self._seen.popitem(last=False)
            else:
                self._seen.move_to_end(sig)
            if now - seen.window_start >= self._interval:
                seen.window_start, seen.lines_in_window = now, 0
            traceback_due = unexpected and (
                seen.last_traceback is None
                or now - seen.last_traceback >= self._traceback_interval)
            if not traceback_due and seen.lines_in_window >= self._burst:
                seen.suppressed += 1
                return False, False, 0
            if traceback_due:
                seen.last_traceback = now
            seen.lines_in_window += 1
            suppressed, seen.suppressed = seen.suppressed, 0
            return traceback_due, True, suppressed
