"""Label and field selectors: parse the API server's string syntax and match objects locally.

The one selector parser of pyctrl: the cache (listers, predicates; re-exported there as
``pyctrl.cache.Selector``/``parse_selector``) and the fake client both use it.

Contract:

* :func:`parse_label_selector` accepts the syntax of ``kubectl -l``/``?labelSelector=``:
  comma-separated requirements ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``,
  ``k`` (exists) and ``!k`` (does not exist). All requirements must hold (AND). ``k!=v`` and
  ``notin`` also match objects without the label, as on the server. Empty or None selects
  everything. It also takes a dict (equality on every pair) or an already parsed
  :class:`LabelSelector` (returned as is).
* A key starts with a letter or digit (``app.kubernetes.io/name`` is one key); ``in`` and
  ``notin`` are separated from the key by white space and need at least one value.
* :func:`parse_field_selector` accepts ``path=v``, ``path==v``, ``path!=v`` joined by commas;
  ``path`` is a dotted JSON path (``metadata.name``, ``status.phase``); a missing field reads
  as the empty string.
* Malformed selectors (unknown clause, unbalanced parentheses, empty value set) raise
  :class:`ValueError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pyctrl.kube import meta

__all__ = [
    "FieldSelector",
    "LabelSelector",
    "Requirement",
    "parse_field_selector",
    "parse_label_selector",
]

Operator = Literal["=", "!=", "in", "notin", "exists", "!"]

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_SET_RE = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\(([^()]*)\)\s*$")
_CMP_RE = re.compile(rf"^\s*({_KEY})\s*(==|=|!=)\s*([-A-Za-z0-9_.]*)\s*$")
_EXISTS_RE = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One clause of a label selector."""

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
class LabelSelector:
    """A parsed label selector: every requirement must match; the empty one matches all."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        have = labels or {}
        return all(r.matches(have) for r in self.requirements)

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        return self.matches(meta.labels(obj))

    def empty(self) -> bool:
        return not self.requirements


def _split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses (ValueError when unbalanced)."""
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


def _requirement(part: str) -> Requirement:
    m = _SET_RE.match(part)
    if m:
        values = frozenset(v.strip() for v in m.group(3).split(",") if v.strip())
        if not values:
            raise ValueError(f"empty value set in label selector requirement {part!r}")
        return Requirement(m.group(1), "in" if m.group(2) == "in" else "notin", values)
    m = _CMP_RE.match(part)
    if m:
        return Requirement(m.group(1), "!=" if m.group(2) == "!=" else "=",
                           frozenset([m.group(3)]))
    m = _EXISTS_RE.match(part)
    if m:
        return Requirement(m.group(2), "!" if m.group(1) else "exists")
    raise ValueError(f"invalid label selector requirement {part!r}")


def parse_label_selector(
    selector: str | Mapping[str, str] | LabelSelector | None,
) -> LabelSelector:
    """Parse ``selector`` (see module docstring); raises ValueError when malformed."""
    if selector is None:
        return LabelSelector()
    if isinstance(selector, LabelSelector):
        return selector
    if isinstance(selector, Mapping):
        return LabelSelector(tuple(Requirement(k, "=", frozenset([v]))
                                   for k, v in sorted(selector.items())))
    if not selector.strip():
        return LabelSelector()
    return LabelSelector(tuple(_requirement(part) for part in _split_top_level(selector)))


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
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        for op in ("!=", "==", "="):
            if op in part:
                key, value = part.split(op, 1)
                terms.append((tuple(key.strip().split(".")), op == "!=", value.strip()))
                break
        else:
            raise ValueError(f"invalid field selector term {part!r}")
    return FieldSelector(tuple(terms))
