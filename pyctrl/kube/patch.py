"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) over plain JSON values.

Contract: both functions are pure: they never mutate their arguments and return a new
document (unchanged sub-trees may be shared with the input, so treat results as read-only or
copy them). A JSON patch operation that cannot apply (missing path, failed ``test``, bad
index) raises :class:`PatchError`, and no partial result escapes. The fake client uses these
to emulate the API server; a strategic merge patch is approximated there by a merge patch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["PatchError", "json_patch", "merge_patch"]


class PatchError(ValueError):
    """A JSON patch operation could not be applied."""


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 merge patch: objects merge key by key, ``null`` deletes a key,
    anything else (lists included) replaces."""
    if not isinstance(patch, Mapping):
        return patch
    result: dict[str, Any] = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"JSON pointer {path!r} must start with '/'")
    return [_unescape(t) for t in path[1:].split("/")]


def _copy_container(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    return value


def _index(container: Sequence[Any], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchError(f"bad array index {token!r}")
    idx = int(token)
    if idx > len(container) or (idx == len(container) and not allow_end):
        raise PatchError(f"array index {idx} out of range")
    return idx


def _get(doc: Any, tokens: list[str]) -> Any:
    cur = doc
    for token in tokens:
        if isinstance(cur, Mapping):
            if token not in cur:
                raise PatchError(f"path /{'/'.join(tokens)} does not exist")
            cur = cur[token]
        elif isinstance(cur, list):
            cur = cur[_index(cur, token, allow_end=False)]
        else:
            raise PatchError(f"path /{'/'.join(tokens)} does not exist")
    return cur


def _apply(doc: Any, tokens: list[str], op: str, value: Any = None) -> Any:
    """Return a copy of ``doc`` with ``op`` (add/remove/replace) applied at ``tokens``."""
    if not tokens:
        if op == "remove":
            raise PatchError("cannot remove the whole document")
        return value
    head, rest = tokens[0], tokens[1:]
    parent = _copy_container(doc)
    if isinstance(parent, dict):
        if rest:
            if head not in parent:
                raise PatchError(f"path component {head!r} does not exist")
            parent[head] = _apply(parent[head], rest, op, value)
        elif op == "add":
            parent[head] = value
        else:
            if head not in parent:
                raise PatchError(f"path component {head!r} does not exist")
            if op == "remove":
                del parent[head]
            else:
                parent[head] = value
        return parent
    if isinstance(parent, list):
        idx = _index(parent, head, allow_end=(op == "add" and not rest))
        if rest:
            parent[idx] = _apply(parent[idx], rest, op, value)
        elif op == "add":
            parent.insert(idx, value)
        elif op == "remove":
            del parent[idx]
        else:
            parent[idx] = value
        return parent
    raise PatchError(f"cannot {op} inside a scalar at {head!r}")


def json_patch(target: Any, operations: Sequence[Mapping[str, Any]]) -> Any:
    """Apply an RFC 6902 patch (add, remove, replace, move, copy, test) to ``target``."""
    doc = target
    for operation in operations:
        if not isinstance(operation, Mapping) or "op" not in operation:
            raise PatchError(f"bad JSON patch operation {operation!r}")
        op = operation["op"]
        path = _pointer(str(operation.get("path", "")))
        if op in ("add", "replace"):
            if "value" not in operation:
                raise PatchError(f"{op} needs a value")
            doc = _apply(doc, path, op, operation["value"])
        elif op == "remove":
            doc = _apply(doc, path, "remove")
        elif op in ("move", "copy"):
            source = _pointer(str(operation.get("from", "")))
            value = _get(doc, source)
            if op == "move":
                doc = _apply(doc, source, "remove")
            doc = _apply(doc, path, "add", value)
        elif op == "test":
            if _get(doc, path) != operation.get("value"):
                raise PatchError(f"test failed at {operation.get('path')!r}")
        else:
            raise PatchError(f"unknown JSON patch op {op!r}")
    return doc
