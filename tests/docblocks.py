"""Run a documentation page's Python block as written: :func:`doc_module` executes it as a
module named ``name`` (registered in ``sys.modules`` while the ``with`` body runs, so msgspec
and dataclasses find the classes it declares) and yields it."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown ``text``, in order."""
    return _FENCE.findall(text)


@contextmanager
def doc_module(code: str, source: Path, name: str) -> Iterator[types.ModuleType]:
    """``code`` (from ``source``) executed as the module ``name``."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        exec(compile(code, str(source), "exec"), module.__dict__)
        yield module
    finally:
        del sys.modules[name]
