"""Label selectors: parse the API's string syntax and match label maps client-side.

Contract: :func:`parse_selector` accepts what ``kubectl -l``/``labelSelector=`` accept:
comma-separated requirements, each one of ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``,
``k notin (a,b)``, ``k`` (exists) and ``!k`` (does not exist). A dict means equality on every
pair. The empty selector matches everything. Malformed input raises ValueError. Matching
follows the API: ``!=`` and ``notin`` also match objects without the label.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["Requirement", "Selector", "parse_selector"]

Operator = Literal["=", "!=", "in", "notin", "exists", "!"]

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_SET_RE = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\(([^()]*)\)\s*$")
_CMP_RE = re.compile(rf"^\s*({_KEY})\s*(==|=|!=)\s*([-A-Za-z0-9_.]*)\s*$")
_EXISTS_RE = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One clause of a selector."""

    key: str
    op: Operator
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        value = labels.get(self.key)
        if op in ("=", "in"):
            return value is not None and value in self.values
        return value is None or value not in self.values  # "!=" and "notin"


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def empty(self) -> bool:
        return not self.requirements


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced parenthesis in selector {text!r}")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"unbalanced parenthesis in selector {text!r}")
    parts.append(text[start:])
    return parts


def parse_selector(selector: str | Mapping[str, str] | Selector | None) -> Selector:
    """Parse a selector string (or build one from a dict); see module docstring."""
    if selector is None:
        return Selector()
    if isinstance(selector, Selector):
        return selector
    if isinstance(selector, Mapping):
        return Selector(tuple(Requirement(k, "=", frozenset([v]))
                              for k, v in sorted(selector.items())))
    if not selector.strip():
        return Selector()
    reqs: list[Requirement] = []
    for part in _split_top_level(selector):
        m = _SET_RE.match(part)
        if m:
            values = frozenset(v.strip() for v in m.group(3).split(",") if v.strip())
            if not values:
                raise ValueError(f"empty value set in selector clause {part!r}")
            reqs.append(Requirement(m.group(1), "in" if m.group(2) == "in" else "notin",
                                    values))
            continue
        m = _CMP_RE.match(part)
        if m:
            op: Operator = "!=" if m.group(2) == "!=" else "="
            reqs.append(Requirement(m.group(1), op, frozenset([m.group(3)])))
            continue
        m = _EXISTS_RE.match(part)
        if m:
            reqs.append(Requirement(m.group(2), "!" if m.group(1) else "exists"))
            continue
        raise ValueError(f"invalid selector clause {part!r}")
    return Selector(tuple(reqs))
