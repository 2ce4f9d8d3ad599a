"""docs/TUTORIAL.md shows the real code and the real numbers: every Python block is copied
verbatim from examples/website or its unit test, the pyctrl column counts those files, and
every step is a block tests/integration/test_tutorial.py runs."""

from __future__ import annotations

import re

from tests.tutorial import EXAMPLE, FILES, TUTORIAL, UNIT_TEST, blocks, code_lines


def test_python_blocks_are_verbatim_from_the_example() -> None:
    sources = [(EXAMPLE / name).read_text() for name in FILES] + [UNIT_TEST.read_text()]
    shown = [body for info, body in blocks() if info == "python"]
    assert len(shown) >= 5
    assert any(body in sources[-1] for body in shown), "the tutorial shows the unit test"
    for body in shown:
        assert any(body in source for source in sources), body[:200]


def test_every_command_is_in_a_block_the_tutorial_test_runs() -> None:
    kinds = [info for info, _ in blocks() if info.startswith("sh")]
    # The scaffold blocks first (tests/integration/test_scaffold.py runs them).
    assert kinds[:2] == ["sh scaffold", "sh scaffold-run"]
    kinds = kinds[2:]
    assert set(kinds) == {"sh tutorial", "sh tutorial-run", "sh tutorial-second-terminal"}
    assert kinds.count("sh tutorial-run") == 1
    assert kinds.index("sh tutorial-run") < kinds.index("sh tutorial-second-terminal")


def test_the_comparison_counts_pyctrls_real_lines() -> None:
    counts = {name: code_lines(EXAMPLE / name) for name in FILES}
    total = sum(lines for lines, _ in counts.values())
    code = sum(c for _, c in counts.values())
    expected = (f"{total} lines in {len(FILES)} files (`api.py` {counts['api.py'][0]}, "
                f"`controller.py` {counts['controller.py'][0]}, `__init__.py` "
                f"{counts['__init__.py'][0]}), {code} without")
    text = re.sub(r"\s+", " ", TUTORIAL.read_text())
    assert expected in text
