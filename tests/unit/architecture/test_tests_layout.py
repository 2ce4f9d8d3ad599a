"""tests/unit is laid out like the code it tests: every test file sits in a folder (a package,
e.g. tests/unit/cache for pyctrl/cache, tests/unit/bench for bench/), none at the root."""

from __future__ import annotations

from pathlib import Path

UNIT = Path(__file__).resolve().parents[1]
ROOT_ALLOWED = {"__init__.py", "conftest.py"}


def loose_files(unit: Path) -> list[str]:
    """The Python files at ``unit``'s root that are not package or fixture files."""
    return sorted(p.name for p in unit.glob("*.py") if p.name not in ROOT_ALLOWED)


def folders_without_init(unit: Path) -> list[str]:
    """Folders under ``unit`` holding tests but no ``__init__.py`` (their modules would be
    imported by basename and clash)."""
    folders = {p.parent for p in unit.rglob("test_*.py")} - {unit}
    return sorted(str(d.relative_to(unit)) for d in folders if not (d / "__init__.py").is_file())


def test_no_test_file_lands_loose_at_the_unit_root() -> None:
    assert loose_files(UNIT) == [], (
        "put unit tests in the folder of what they test (tests/unit/<subpackage>/)")


def test_every_test_folder_is_a_package() -> None:
    assert folders_without_init(UNIT) == []


def test_the_checks_see_a_loose_file_and_a_bare_folder(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text("")
    (tmp_path / "test_loose.py").write_text("")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "test_store.py").write_text("")
    assert loose_files(tmp_path) == ["test_loose.py"]
    assert folders_without_init(tmp_path) == ["cache"]
