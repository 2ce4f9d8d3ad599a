"""configure_logging output, probe endpoint formatting, bind addresses and signal handling."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import threading
from collections.abc import Iterator
from typing import Literal

import pytest
import structlog

from pyctrl.log import configure_logging
from pyctrl.manager import install_signal_handlers
from pyctrl.serving import Checks, parse_bind_address


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.reset_defaults()


def test_json_logs_carry_context_logger_level_and_traceback(restore_logging: None) -> None:
    out = io.StringIO()
    configure_logging("json", "info", stream=out)
    log = structlog.get_logger("pyctrl.demo")
    with structlog.contextvars.bound_contextvars(reconcile_id="r-1"):
        log.info("created job", job="j1")
        log.debug("not shown")
        try:
            raise ValueError("bad")
        except ValueError:
            log.exception("failed")
    logging.getLogger("urllib3").warning("foreign")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["created job", "failed", "foreign"]
    first = lines[0]
    assert first["job"] == "j1" and first["reconcile_id"] == "r-1"
    assert first["logger"] == "pyctrl.demo" and first["level"] == "info"
    assert first["timestamp"].endswith("Z")
    assert "ValueError: bad" in lines[1]["exception"]


@pytest.mark.parametrize("fmt", ["json", "console"])
def test_lines_as_structlogs_own_formatter_renders_them_and_records_left_alone(
        restore_logging: None, fmt: Literal["json", "console"]) -> None:
    """pyctrl's formatter skips the record copy; the lines are the ones structlog's
    ProcessorFormatter renders, and another handler still sees the record as it was."""
    out = io.StringIO()
    configure_logging(fmt, "info", stream=out)
    ours = logging.getLogger().handlers[0]
    theirs_out = io.StringIO()
    theirs = logging.StreamHandler(theirs_out)
    assert isinstance(ours.formatter, structlog.stdlib.ProcessorFormatter)
    theirs.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=ours.formatter.foreign_pre_chain,
        processors=ours.formatter.processors))
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    for handler in (theirs, Keep()):
        logging.getLogger().addHandler(handler)
    log = structlog.get_logger("pyctrl.demo")
    log.info("created job", key="ops/b", job="b-1", n=3, odd=object)
    try:
        raise ValueError("bad")
    except ValueError:
        log.exception("failed", key="ops/b")
    logging.getLogger("urllib3").warning("foreign %s", "arg")
    # A foreign record is stamped when each handler formats it: compare structlog's lines.
    ours_lines, theirs_lines = out.getvalue().splitlines(), theirs_out.getvalue().splitlines()
    assert len(ours_lines) == len(theirs_lines) and len(ours_lines) >= 3
    assert ours_lines[:-1] == theirs_lines[:-1] and "created job" in ours_lines[0]
    assert "foreign arg" in ours_lines[-1]
    assert isinstance(seen[0].msg, dict) and seen[0].msg["event"] == "created job"
    assert seen[0].msg["job"] == "b-1"


def test_console_format_and_bad_arguments(restore_logging: None) -> None:
    out = io.StringIO()
    configure_logging("console", "debug", stream=out)
    structlog.get_logger("x").debug("hello", a=1)
    assert "hello" in out.getvalue() and "a=1" in out.getvalue()
    with pytest.raises(ValueError):
        configure_logging("json", "loud")


def test_checks_answer_like_the_apiserver() -> None:
    checks = Checks("readyz")
    checks.add("ping", lambda: None)
    checks.add("cache", lambda: "not synced")
    code, _, body = checks.serve("/readyz", {})
    assert code == 500 and b"[-]cache failed: not synced" in body and b"[+]ping ok" in body
    assert checks.serve("/readyz/ping", {})[0] == 200
    assert checks.serve("/readyz/zzz", {})[0] == 404
    ok = Checks("healthz")

    def boom() -> str | None:
        raise RuntimeError("probe crashed")

    ok.add("boom", boom)
    assert ok.serve("/healthz", {})[0] == 500
    with pytest.raises(ValueError):
        checks.add("ping", lambda: None)


def test_bind_addresses() -> None:
    assert parse_bind_address("0") is None
    assert parse_bind_address(":8080") == ("0.0.0.0", 8080)
    assert parse_bind_address("127.0.0.1:0") == ("127.0.0.1", 0)
    with pytest.raises(ValueError):
        parse_bind_address("8080")


def test_first_signal_sets_stop_and_handlers_can_be_restored() -> None:
    assert threading.current_thread() is threading.main_thread()
    stop = threading.Event()
    before = signal.getsignal(signal.SIGTERM)
    restore = install_signal_handlers(stop)
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.wait(5)
    finally:
        restore()
    assert signal.getsignal(signal.SIGTERM) is before
