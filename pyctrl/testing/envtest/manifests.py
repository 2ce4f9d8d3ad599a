"""Reading Kubernetes manifests (YAML or JSON files, or directories of them) for envtest.

Contract: :func:`load_manifests` returns every non-empty mapping document of the given files
and directories (a directory's ``.yaml``/``.yml``/``.json`` files in name order), in order.
It imports nothing else from envtest, so the control plane and the webhook installer both use
it without importing each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

__all__ = ["load_manifests"]


def load_manifests(paths: Iterable[Path | str]) -> list[dict[str, Any]]:
    """All YAML/JSON documents in the given files and directories (sorted by file name)."""
    docs: list[dict[str, Any]] = []
    for raw in paths:
        path = Path(raw)
        files = sorted(
            p for p in (path.iterdir() if path.is_dir() else [path])
            if p.suffix in (".yaml", ".yml", ".json")
        )
        for file in files:
            # The C loader when libyaml is there: the CRD embeds the batch/v1 Job schema
            # (~190 KB), which the pure-Python loader takes seconds to parse.
            for doc in yaml.load_all(file.read_text(), Loader=_YAML_LOADER):
                if isinstance(doc, dict) and doc:
                    docs.append(doc)
    return docs


_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
