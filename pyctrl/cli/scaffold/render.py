"""The scaffold's templates (package data under ``templates/<set>/``) made into files.

Contract: :func:`files` walks one template set and returns ``{output path: text}``. A
template's path is its output path with ``.tmpl`` dropped, a leading ``dot-`` turned into
``.`` and the path tokens ``__package__``, ``__version__``, ``__lower__`` replaced; in its
text each ``{{key}}`` is replaced from ``values``. A ``{{key}}`` with no value is a bug of
the template (KeyError naming it), never left in the output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable

__all__ = ["files", "render"]

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_PATH_TOKENS = ("package", "version", "lower")


def render(text: str, values: Mapping[str, str], where: str = "") -> str:
    """``text`` with every ``{{key}}`` replaced from ``values`` (module docstring)."""
    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise KeyError(f"template {where}: no value for {{{{{key}}}}}")
        return values[key]
    return _PLACEHOLDER.sub(one, text)


def _walk(node: Traversable, prefix: str) -> list[tuple[str, Traversable]]:
    out: list[tuple[str, Traversable]] = []
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        name = child.name
        if child.is_dir():
            if name != "__pycache__":
                out.extend(_walk(child, f"{prefix}{name}/"))
        elif name.endswith(".tmpl"):
            out.append((f"{prefix}{name.removesuffix('.tmpl')}", child))
    return out


def _path(template_path: str, values: Mapping[str, str]) -> str:
    parts = []
    for given in template_path.split("/"):
        part = "." + given.removeprefix("dot-") if given.startswith("dot-") else given
        for token in _PATH_TOKENS:
            if token in values:
                part = part.replace(f"__{token}__", values[token])
        parts.append(part)
    return "/".join(parts)


def files(template_set: str, values: Mapping[str, str]) -> dict[str, str]:
    """The files of ``templates/<template_set>`` for ``values`` (module docstring)."""
    root = resources.files("pyctrl.cli.scaffold") / "templates" / template_set
    return {_path(path, values): render(node.read_text(encoding="utf-8"), values, path)
            for path, node in _walk(root, "")}
