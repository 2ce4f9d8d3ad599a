"""Structured logging setup for pyctrl processes (structlog on top of stdlib logging).

Contract: :func:`configure_logging` makes every ``structlog.get_logger(__name__)`` call and
every stdlib ``logging`` record (client libraries) come out through one handler on
``stream`` (default stderr), rendered as one JSON object per line (``format="json"``) or as
human-readable colourless lines (``format="console"``). Each line carries ``timestamp``
(ISO 8601, UTC), ``level``, ``logger`` (the module name), the event and its key/values, every
value bound with ``structlog.contextvars`` (e.g. the controller's ``reconcile_id``), and a
rendered traceback for ``log.exception``. Calling it again replaces the previous setup. A
structlog call renders its event once, on the handler's formatter, without copying the
stdlib record (what other handlers of the same record see is untouched).
:func:`get_logger` is the logger pyctrl's own modules use (a structlog bound logger), so a
controller written on pyctrl logs the same way without importing structlog itself.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Literal, TextIO

import structlog
from structlog.typing import Processor

__all__ = ["configure_logging", "get_logger"]

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR, "critical": logging.CRITICAL}


def get_logger(name: str | None = None) -> structlog.stdlib.BoundLogger:
    """A structured logger named ``name`` (normally ``__name__``), rendered as configured."""
    logger: structlog.stdlib.BoundLogger = structlog.get_logger(name)
    return logger


class _Formatter(structlog.stdlib.ProcessorFormatter):
    """A ProcessorFormatter that renders a structlog record's event dict straight away.

    The base class copies every record (``logging.makeLogRecord``) before rendering and then
    runs ``logging.Formatter.format`` over the result; for a record from structlog neither
    changes the line (no stdlib ``exc_info`` or ``stack_info`` rides on it: structlog's own
    processors render those), so this renders the copied event dict and returns the string.
    Foreign (stdlib) records take the base path unchanged.
    """

    def format(self, record: logging.LogRecord) -> str:
        meth_name = getattr(record, "_name", None)
        logger = getattr(record, "_logger", None)
        msg: Any = record.msg
        if (meth_name is None or logger is None or not isinstance(msg, dict)
                or record.exc_info or record.stack_info):
            return super().format(record)
        ed: Any = dict(msg)
        ed["_record"] = record
        ed["_from_structlog"] = True
        if self.logger is not None:
            logger = self.logger
        for processor in self.processors:
            ed = processor(logger, meth_name, ed)
        if not isinstance(ed, str):
            return super().format(record)
        return ed


def configure_logging(
    format: Literal["json", "console"] = "json",
    level: str = "info",
    *,
    stream: TextIO | None = None,
) -> None:
    """Route structlog and stdlib logging through one handler (see module docstring)."""
    try:
        numeric = _LEVELS[level.lower()]
    except KeyError:
        raise ValueError(f"unknown log level {level!r}; use one of {sorted(_LEVELS)}") from None
    if format not in ("json", "console"):
        raise ValueError(f"unknown log format {format!r}; use 'json' or 'console'")
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: Processor
    final: list[Processor] = [structlog.stdlib.ProcessorFormatter.remove_processors_meta]
    if format == "json":
        final += [structlog.processors.format_exc_info,
                  structlog.processors.UnicodeDecoder()]
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[structlog.stdlib.filter_by_level, *shared,
                    structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(_Formatter(
        foreign_pre_chain=shared, processors=[*final, renderer],
    ))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
