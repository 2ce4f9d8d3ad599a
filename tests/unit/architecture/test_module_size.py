"""House rule: every hand-written Python file of pyctrl and cronjob_controller is at most
400 lines (one concept per module, docs/DESIGN.md "Layout"); the generated kinds in
pyctrl/models are not hand-written."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LIMIT = 400
GENERATED = ROOT / "pyctrl" / "models"


def _sizes() -> dict[str, int]:
    return {str(path.relative_to(ROOT)): len(path.read_text().splitlines())
            for package in ("pyctrl", "cronjob_controller")
            for path in sorted((ROOT / package).rglob("*.py"))
            if not path.is_relative_to(GENERATED)}


def test_hand_written_modules_stay_under_the_line_limit() -> None:
    over = {name: n for name, n in _sizes().items() if n > LIMIT}
    assert over == {}


def test_the_check_reads_the_files_it_guards() -> None:
    sizes = _sizes()
    assert {"pyctrl/builder.py", "pyctrl/testing/envtest/controlplane.py",
            "pyctrl/testing/envtest/webhooks.py", "cronjob_controller/controller.py"} <= set(sizes)
    assert not any(name.startswith("pyctrl/models/") for name in sizes)
