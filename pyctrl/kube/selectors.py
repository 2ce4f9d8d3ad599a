"""Label and field selectors: parse the API server's string syntax and match objects locally.

Contract:

* :func:`parse_label_selector` accepts the syntax of ``?labelSelector=``: comma-separated
  requirements ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k`` (exists)
  and ``!k`` (does not exist). All requirements must hold (AND). ``k!=v`` and ``notin`` also
  match objects without the label, as on the server. Empty or None selects everything.
* :func:`parse_field_selector` accepts ``path=v``, ``path==v``, ``path!=v`` joined by commas;
  ``path`` is a dotted JSON path (``metadata.name``, ``status.phase``); a missing field reads
  as the empty string.
* Malformed selectors raise :class:`ValueError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["FieldSelector", "LabelSelector", "parse_field_selector", "parse_label_selector"]

Operator = Literal["=", "!=", "in", "notin", "exists", "!"]

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9./_-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ_RE = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: Operator
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector: every requirement must match."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        have = labels or {}
        return all(r.matches(have) for r in self.requirements)

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        return self.matches((obj.get("metadata") or {}).get("labels"))


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p for p in (s.strip() for s in parts) if p]


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse ``text`` (see module docstring); raises ValueError when malformed."""
    if not text or not text.strip():
        return LabelSelector()
    reqs: list[Requirement] = []
    for part in _split_top_level(text):
        eq = _EQ_RE.match(part)
        if eq:
            op: Operator = "!=" if eq.group(2) == "!=" else "="
            reqs.append(Requirement(eq.group(1), op, frozenset([eq.group(3)])))
            continue
        m = _SET_RE.match(part)
        if not m:
            raise ValueError(f"invalid label selector requirement {part!r}")
        bang, key, set_op, values = m.groups()
        if set_op:
            if bang:
                raise ValueError(f"invalid label selector requirement {part!r}")
            vals = frozenset(v.strip() for v in values.split(",") if v.strip())
            reqs.append(Requirement(key, "in" if set_op == "in" else "notin", vals))
        else:
            reqs.append(Requirement(key, "!" if bang else "exists"))
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True)
class FieldSelector:
    """A parsed field selector: ``(path, negated, value)`` terms, all of which must hold."""

    terms: tuple[tuple[tuple[str, ...], bool, str], ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        for path, negated, value in self.terms:
            cur: Any = obj
            for key in path:
                cur = cur.get(key) if isinstance(cur, Mapping) else None
            text = "" if cur is None else (str(cur).lower() if isinstance(cur, bool) else str(cur))
            if (text == value) == negated:
                return False
        return True


def parse_field_selector(text: str | None) -> FieldSelector:
    """Parse ``text`` (see module docstring); raises ValueError when malformed."""
    if not text or not text.strip():
        return FieldSelector()
    terms: list[tuple[tuple[str, ...], bool, str]] = []
    for part in _split_top_level(text):
        for op in ("!=", "==", "="):
            if op in part:
                key, value = part.split(op, 1)
                terms.append((tuple(key.strip().split(".")), op == "!=", value.strip()))
                break
        else:
            raise ValueError(f"invalid field selector term {part!r}")
    return FieldSelector(tuple(terms))
