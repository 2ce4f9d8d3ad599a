"""docs/TUTORIAL.md's fenced blocks, for the tests that hold the tutorial to the code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "docs" / "TUTORIAL.md"
EXAMPLE = ROOT / "examples" / "website"
FILES = ("api.py", "controller.py", "__init__.py")
UNIT_TEST = ROOT / "tests" / "unit" / "examples" / "test_website.py"  # shown in part, too

_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(text: str | None = None) -> list[tuple[str, str]]:
    """(info string, body) of every fenced block, in order."""
    return [(m.group(1).strip(), m.group(2))
            for m in _FENCE.finditer(TUTORIAL.read_text() if text is None else text)]


def code_lines(path: Path) -> tuple[int, int]:
    """(all lines, lines that are neither blank, comments nor docstrings) of a Python file."""
    src = path.read_text()
    docs: set[int] = set()
    for node in ast.walk(ast.parse(src)):
        if (isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef) and node.body
                and isinstance(node.body[0], ast.Expr)
                and isinstance(node.body[0].value, ast.Constant)
                and isinstance(node.body[0].value.value, str)):
            first = node.body[0]
            docs.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines = src.splitlines()
    code = [n for n, line in enumerate(lines, 1)
            if line.strip() and not line.strip().startswith("#") and n not in docs]
    return len(lines), len(code)
