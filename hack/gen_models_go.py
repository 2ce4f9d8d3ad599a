"""Which fields of the Kubernetes API types the server may send as ``null`` (for
hack/gen_models.py), read from the Go sources the OpenAPI spec was generated from.

Contract:

* The OpenAPI spec does not say it, but Go's encoding/json writes ``null`` for a nil slice,
  map or pointer whose field has no ``omitempty`` (an aggregated ClusterRole's ``rules``).
  :func:`nullable_fields` returns, per schema name, the JSON names of such fields: a slice
  (``[]byte`` too), map or pointer type with a ``json:"name"`` tag that lacks ``omitempty``.
* Sources: the Go module cache's ``k8s.io/<repository>@<version>`` for each schema prefix
  (``io.k8s.api.core.v1`` -> ``k8s.io/api@v0.35.4/core/v1``; the staging repositories'
  versions are ``v0.<minor>.<patch>`` of Kubernetes ``v1.<minor>.<patch>``). A prefix whose
  sources are not there is an error, so a snapshot is never built from half the facts.
* Parsing is line-based, as ``gofmt`` lays out struct types: ``type Name struct {`` up to
  the ``}`` that closes it at the start of a line; one field a line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

__all__ = ["nullable_fields", "source_dir"]

_PREFIX = re.compile(r"io\.k8s\.([a-z-]+)\.((?:[a-z0-9]+\.)*v[0-9a-z]+)")
_TYPE = re.compile(r"^type (\w+) struct \{\s*$")
_FIELD = re.compile(r'^\s+\w+\s+(\S[^`]*?)\s+`[^`]*\bjson:"([^"]*)"')


def source_dir(module_cache: Path, prefix: str, version: str) -> Path:
    """The Go package of schema-name ``prefix`` for Kubernetes ``version`` (``v1.35.4``)."""
    match = _PREFIX.fullmatch(prefix)
    if match is None:
        raise ValueError(f"no Go package for {prefix}")
    staging = "v0." + version.removeprefix("v1.")
    repository, package = match[1], match[2].replace(".", "/")
    return module_cache / "k8s.io" / f"{repository}@{staging}" / package


def _struct_fields(lines: list[str]) -> dict[str, list[tuple[str, str]]]:
    """type name -> (Go type, json tag) of each tagged field."""
    out: dict[str, list[tuple[str, str]]] = {}
    name = ""
    for line in lines:
        if not name:
            match = _TYPE.match(line)
            if match:
                name = match[1]
                out[name] = []
            continue
        if line.startswith("}"):
            name = ""
            continue
        field = _FIELD.match(line)
        if field:
            out[name].append((field[1], field[2]))
    return out


def nullable_fields(module_cache: Path, version: str, prefixes: Iterable[str]
                    ) -> dict[str, list[str]]:
    """Schema name -> JSON names of its fields that may be ``null`` (see module docstring)."""
    out: dict[str, list[str]] = {}
    for prefix in sorted(set(prefixes)):
        directory = source_dir(module_cache, prefix, version)
        files = sorted(p for p in directory.glob("*.go")
                       if not p.name.endswith("_test.go") and not p.name.startswith("zz_"))
        if not files:
            raise FileNotFoundError(f"no Go sources for {prefix} in {directory}")
        lines = [line for path in files for line in path.read_text().splitlines()]
        for type_name, fields in _struct_fields(lines).items():
            names = sorted(tag.split(",")[0] for go_type, tag in fields
                           if go_type.startswith(("[]", "map[", "*"))
                           and tag.split(",")[0] not in ("", "-")
                           and "omitempty" not in tag.split(",")[1:])
            if names:
                out[f"{prefix}.{type_name}"] = names
    return out
