"""Issue 36: a connection knows its server only through the small protocol beside it
(``ConnServer``), so ``connection.py`` imports neither the server nor its bookkeeping, not
even for type checking; every front-end module stays under 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pyctrl.frontend

PACKAGE = Path(pyctrl.frontend.__file__).parent


def _imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_the_connection_does_not_import_the_server() -> None:
    imported = _imported(PACKAGE / "connection.py")
    assert not imported & {"pyctrl.frontend.server", "pyctrl.frontend.slots",
                           "pyctrl.frontend.Frontend"}


def test_front_end_modules_stay_small() -> None:
    sizes = {p.name: len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n >= 400} == {}
