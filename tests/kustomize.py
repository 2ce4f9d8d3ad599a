"""A small kustomize in Python, enough for this repository's trees (manifests/ and the
scaffolded projects' config/), so their checks run without a kubectl binary; the tests that
find one (:func:`kubectl`) check ``kubectl kustomize`` renders the same objects.

Contract: :func:`build` composes a directory's kustomization: ``resources`` (files and
directories), ``components`` (each a ``kind: Component``), JSON-patch ``add`` operations on
the one object a patch's ``target`` names, and ``images`` (``newName``/``newTag``). Anything
else in a kustomization (a ``namespace`` transformer, other patch operations) is not applied:
keep every object's namespace explicit. :func:`kubectl` is the first kubectl found (PATH,
``$KUBEBUILDER_ASSETS``, the control-plane cache), or None.
"""

from __future__ import annotations

import copy
import glob
import os
import shutil
from pathlib import Path
from typing import Any

import yaml

__all__ = ["build", "docs", "kubectl", "kustomization"]


def docs(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def kustomization(directory: Path) -> dict[str, Any]:
    return dict(yaml.safe_load((directory / "kustomization.yaml").read_text()))


def _json_patch_add(obj: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    for op in ops:
        assert op["op"] == "add", op  # the tree only appends; say so if that changes
        *parents, last = op["path"].lstrip("/").split("/")
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        value = copy.deepcopy(op["value"])
        if isinstance(node, list):
            node.insert(len(node) if last == "-" else int(last), value)
        else:
            node[last] = value


def _matches(obj: dict[str, Any], target: dict[str, Any]) -> bool:
    group, _, version = obj["apiVersion"].rpartition("/")
    return bool(target.get("kind", obj["kind"]) == obj["kind"]
            and target.get("name", obj["metadata"]["name"]) == obj["metadata"]["name"]
            and target.get("group", group) == group
            and target.get("version", version) == version)


def build(directory: Path, acc: list[dict[str, Any]]) -> list[dict[str, Any]]:
    k = kustomization(directory)
    for res in k.get("resources") or []:
        path = directory / res
        acc += build(path, []) if path.is_dir() else [copy.deepcopy(d) for d in docs(path)]
    for component in k.get("components") or []:
        assert kustomization(directory / component)["kind"] == "Component"
        acc = build(directory / component, acc)
    for patch in k.get("patches") or []:
        ops = yaml.safe_load((directory / patch["path"]).read_text())
        hits = [obj for obj in acc if _matches(obj, patch["target"])]
        assert len(hits) == 1, (directory, patch)
        _json_patch_add(hits[0], ops)
    for image in k.get("images") or []:
        for obj in acc:
            for c in obj.get("spec", {}).get("template", {}).get("spec", {}).get(
                    "containers", []):
                if c["image"].rsplit(":", 1)[0] == image["name"]:
                    name = image.get("newName", image["name"])
                    c["image"] = f"{name}:{image.get('newTag', c['image'].rsplit(':', 1)[1])}"
    return acc


def kubectl() -> str | None:
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    candidates = [shutil.which("kubectl"), *(
        [str(Path(assets) / "kubectl")] if assets else []), *sorted(glob.glob(
            str(Path.home() / ".cache" / "pyctrl" / "controlplane" / "*" / "kubectl")))]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)
