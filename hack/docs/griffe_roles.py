"""A griffe extension for the docs site: Sphinx roles in docstrings become Markdown code.

pyctrl's docstrings name things the Sphinx way (``:class:`Client```, ``:func:`derive```) and
quote code with double backticks; mkdocstrings renders docstrings as Markdown, where double
backticks already are code but a role would show as ``:class:`` followed by the name. This
rewrites each role to the plain code span of its target (``~`` and ``!`` prefixes dropped),
so the reference reads as the source means it. Links between objects come from signatures
(type annotations) and from Markdown cross-references (``[Name][pyctrl.Name]``) written in a
docstring, which the strict build checks.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from griffe import Extension, Inspector, Object, ObjectNode, Visitor

_ROLE = re.compile(
    r":(?:py:)?(?:mod|class|func|meth|attr|data|exc|obj|const|ref|term):`([~!]?)([^`]+)`"
)


def _code(match: re.Match[str]) -> str:
    target = match.group(2)
    if match.group(1) == "~":
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def rewrite_roles(text: str) -> str:
    """Return ``text`` with every Sphinx role replaced by a code span of its target."""
    return _ROLE.sub(_code, text)


class SphinxRoles(Extension):
    """Rewrites the Sphinx roles of every docstring griffe loads (see the module docstring)."""

    def on_instance(
        self,
        *,
        node: ast.AST | ObjectNode,
        obj: Object,
        agent: Visitor | Inspector,
        **kwargs: Any,
    ) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite_roles(obj.docstring.value)
