"""A griffe extension for the docs site: Sphinx roles in docstrings become optional links.

pyctrl's docstrings name things the Sphinx way (``:class:`Client```, ``:func:`derive```) and
quote code with double backticks; mkdocstrings renders docstrings as Markdown, where double
backticks already are code but a role would show as ``:class:`` and the name. Once a package
is loaded, each role is rewritten to the code span of its target inside an *optional*
autorefs link: the target is resolved the way Python would see the name from where the
docstring is (``Client`` in pyctrl.kube's docstrings is ``pyctrl.kube.interface.Client``;
``~`` shows the last part only), the link is made when that object is on the site, and a
target that is not (a private module) stays plain code. Links that must exist are written as
Markdown cross-references (``[Name][pyctrl.Name]``), which the strict build checks. A
paragraph's closing ``::`` (reST for "a literal block follows") shows as one colon.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import escape
from typing import Any

from griffe import Extension, GriffeError, GriffeLoader, Module, Object

# reST's "text::" before an indented literal block: Sphinx shows one colon, and so do we (the
# indented block already is a Markdown code block).
_LITERAL = re.compile(r"(?<=\S)::(?=\n\s*\n)")
_ROLE = re.compile(
    r":(?:py:)?(?:mod|class|func|meth|attr|data|exc|obj|const|ref|term):`([~!]?)([^`]+)`"
)


def _resolve(obj: Object, target: str) -> str:
    if target.startswith("pyctrl."):
        return target
    head, _, rest = target.partition(".")
    try:
        path = obj.resolve(head)
    except GriffeError:  # not resolvable from here: the target stays as written
        return target
    return f"{path}.{rest}" if rest else path


def rewrite_roles(text: str, obj: Object | None = None) -> str:
    """Return ``text`` with every Sphinx role replaced by an optional link to its target.

    A paragraph ending in reST's ``::`` (a literal block follows) ends in one colon.
    """

    def link(match: re.Match[str]) -> str:
        prefix, target = match.group(1), match.group(2)
        shown = target.rsplit(".", 1)[-1] if prefix == "~" else target
        if prefix == "!" or obj is None:
            return f"`{shown}`"
        identifier = escape(_resolve(obj, target), quote=True)
        return f'<autoref identifier="{identifier}" optional>`{shown}`</autoref>'

    return _ROLE.sub(link, _LITERAL.sub(":", text))


def _objects(obj: Object) -> Iterator[Object]:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)  # type: ignore[arg-type]


class SphinxRoles(Extension):
    """Rewrites the Sphinx roles of every docstring of a loaded package (module docstring)."""

    def on_package(self, *, pkg: Module, loader: GriffeLoader, **kwargs: Any) -> None:
        for obj in _objects(pkg):
            if obj.docstring is not None:
                obj.docstring.value = rewrite_roles(obj.docstring.value, obj)
