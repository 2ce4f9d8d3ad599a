"""hack/run.py's live view says "waiting for the next run at ..." once per tick, not once per
Job created at that tick (issue 27 item 6)."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pyctrl.testing import FakeClient

ROOT = Path(__file__).resolve().parents[3]
TICK = datetime(2026, 3, 10, 12, 1, tzinfo=UTC)
NEXT = datetime(2026, 3, 10, 12, 2, tzinfo=UTC)


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_script", ROOT / "hack" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_waiting_is_said_once_per_next_time(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    run = _load()
    upcoming = [(TICK, "default/a"), (TICK, "default/b")]

    def next_runs(client: Any, now: datetime) -> list[tuple[datetime, str]]:
        return list(upcoming)

    monkeypatch.setattr(run, "next_runs", next_runs)
    client = FakeClient()
    announced = run.say_waiting(client, first=True)
    upcoming[:] = [(NEXT, "default/a"), (NEXT, "default/b")]  # the tick: two Jobs created
    for _ in range(2):
        announced = run.say_waiting(client, first=False, announced=announced)

    lines = [line for line in capsys.readouterr().out.splitlines() if "waiting" in line]
    assert len(lines) == 2, lines
    assert lines[0].startswith("run: waiting for the first run at")
    assert lines[1].startswith("run: waiting for the next run at")
    assert announced == NEXT
