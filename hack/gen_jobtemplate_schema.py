"""Generate spec.jobTemplate of the CronJob CRD from the apiserver's batch/v1 OpenAPI v3.

Usage (project venv)::

    .venv/bin/python hack/gen_jobtemplate_schema.py            # rewrite the CRD's subtree
    .venv/bin/python hack/gen_jobtemplate_schema.py --check    # exit 1 if it is out of date
    ... --kubeconfig PATH    # read the schema from that cluster instead of a local one
    ... --openapi FILE       # read a saved /openapi/v3/apis/batch/v1 document instead

Contract:

* The source of truth is ``io.k8s.api.batch.v1.JobTemplateSpec`` as the running
  kube-apiserver publishes it (``GET /openapi/v3`` names the batch/v1 document). Without
  ``--kubeconfig``/``--openapi`` a throwaway local control plane
  (:class:`pyctrl.testing.envtest.ControlPlane`, the pinned Kubernetes version) serves it.
* The result is one inline *structural* schema, shaped as controller-gen shapes the embedded
  JobTemplateSpec of kubebuilder's CronJob: every ``$ref`` is inlined and its ``allOf``
  wrapper dropped; IntOrString and Quantity become ``x-kubernetes-int-or-string: true`` with
  no ``type`` (Quantity also gets controller-gen's pattern); ``required``,
  ``x-kubernetes-list-type``/``-list-map-keys``/``-map-type`` are kept; patch-strategy and
  union extensions (which CRDs cannot carry) are dropped; ``default`` is dropped except on
  list-map keys that are not required (the structural rule: such a key needs a default);
  ``x-kubernetes-preserve-unknown-fields`` appears only where upstream has it (nowhere in
  JobTemplateSpec today). ObjectMeta keeps what is used: labels and annotations for the Job
  template's own metadata (all the controller copies); controller-gen's embedded-ObjectMeta
  set (annotations, finalizers, labels, name, namespace) for nested templates. Descriptions
  are dropped (size: the CRD must stay well under the 256 KiB ``kubectl apply`` annotation
  limit); the CRD keeps its own description of ``jobTemplate``.
* Only the ``jobTemplate:`` block under ``spec.properties`` (plus one generated comment line
  above it and one in the file header) is rewritten, as text: every other byte of the file,
  comments included, stays as it is. The file is re-read right before writing and the write is
  retried if someone changed it meanwhile; the result is parsed and must equal the old
  document with only that subtree replaced, or nothing is written.
* Deterministic: the same OpenAPI document always produces the same bytes, so ``--check``
  (used by tests/integration/cronjob/test_jobtemplate_schema.py) can compare text.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CRD_FILE = ROOT / "crds" / "cronjobs.batch.pyctrl.io.yaml"
COMMAND = "hack/gen_jobtemplate_schema.py"

TEMPLATE = "io.k8s.api.batch.v1.JobTemplateSpec"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
# controller-gen's pattern for resource.Quantity (k8s.io/apimachinery's quantity grammar).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
# ObjectMeta fields kept: the Job template's own metadata (the controller copies only these)
# and any nested template's (controller-gen's generateEmbeddedObjectMeta set).
TEMPLATE_META_FIELDS = ("annotations", "labels")
TEMPLATE_META_DESCRIPTION = "Labels and annotations, copied to each Job (nothing else is)."
# Keys of the jobTemplate node itself that the CRD owns and regeneration keeps: its description,
# and ``required: [spec]`` (a template without a Job spec can never run).
OWN_KEYS = ("description", "required")
EMBEDDED_META_FIELDS = ("annotations", "finalizers", "labels", "name", "namespace")

# Keys copied through unchanged; anything not listed here or handled below is an error, so a
# new upstream construct is noticed instead of silently mistranslated.
_COPIED = ("type", "format", "enum", "minimum", "maximum", "minLength", "maxLength",
           "pattern", "minItems", "maxItems", "nullable",
           "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
           "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource")
_DROPPED = ("description", "x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key",
            "x-kubernetes-unions", "default")
_KEY_ORDER = ("description", "type", "format", "x-kubernetes-int-or-string", "pattern",
              "enum", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems",
              "nullable", "default", "required", "properties", "items", "additionalProperties",
              "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
              "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource")

Schema = dict[str, Any]
# libyaml when PyYAML has it: the CRD is about 190 KB and pure-Python parsing takes seconds.
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """Parse one YAML document with the safe loader (libyaml's when available)."""
    return yaml.load(text, Loader=_Loader)  # a safe loader either way


class GenerateError(RuntimeError):
    """The OpenAPI document or the CRD file is not what this generator understands."""


# -- OpenAPI -> structural schema ---------------------------------------------------------
class _Converter:
    def __init__(self, schemas: Mapping[str, Any]) -> None:
        self.schemas = schemas
        self._stack: list[str] = []

    def _ref_name(self, node: Mapping[str, Any]) -> str | None:
        ref = node.get("$ref")
        if ref is None:
            all_of = node.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
                ref = all_of[0]["$ref"]
            elif all_of is not None:
                raise GenerateError(f"unsupported allOf at {self._where()}: {all_of}")
        if ref is None:
            return None
        prefix = "#/components/schemas/"
        if not str(ref).startswith(prefix):
            raise GenerateError(f"unsupported $ref {ref!r} at {self._where()}")
        return str(ref)[len(prefix):]

    def _where(self) -> str:
        return ".".join(self._stack) or "<root>"

    def definition(self, name: str) -> Schema:
        """The structural schema of the named component."""
        if name in self._stack:
            raise GenerateError(f"recursive schema {name} at {self._where()}")
        if name == INT_OR_STRING:
            return {"x-kubernetes-int-or-string": True}
        if name == QUANTITY:
            return {"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN}
        try:
            node = self.schemas[name]
        except KeyError:
            raise GenerateError(f"{name} is not in the OpenAPI document") from None
        if name == OBJECT_META:
            node = dict(node, properties={k: v for k, v in node["properties"].items()
                                          if k in EMBEDDED_META_FIELDS})
        self._stack.append(name)
        try:
            return self.node(node)
        finally:
            self._stack.pop()

    def node(self, node: Mapping[str, Any], key: str = "") -> Schema:
        """Convert one schema node (a property, items or additionalProperties value)."""
        name = self._ref_name(node)
        if name is not None:
            extra = set(node) - {"$ref", "allOf", "default", "description"}
            if extra:
                raise GenerateError(f"unexpected {sorted(extra)} next to $ref at {key}")
            return self.definition(name)
        if node.get("format") == "int-or-string" or node.get("x-kubernetes-int-or-string"):
            return {"x-kubernetes-int-or-string": True}
        out: Schema = {}
        for field, value in node.items():
            if field in _COPIED:
                out[field] = copy.deepcopy(value)
            elif field == "required":
                out["required"] = sorted(value)
            elif field == "properties":
                out["properties"] = {k: self.node(v, k) for k, v in sorted(value.items())}
            elif field == "items":
                out["items"] = self.node(value, key)
            elif field == "additionalProperties":
                out["additionalProperties"] = (
                    self.node(value, key) if isinstance(value, Mapping) else value)
            elif field not in _DROPPED:
                raise GenerateError(f"unsupported {field!r} at {self._where()}.{key}")
        if "type" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
            raise GenerateError(f"no type at {self._where()}.{key}: {dict(node)}")
        self._list_map_defaults(node, out)
        return _ordered(out)

    def _list_map_defaults(self, node: Mapping[str, Any], out: Schema) -> None:
        """Keep upstream's default on each list-map key that is not required (and only there):
        a structural CRD rejects a list-map key that is neither required nor defaulted."""
        keys = out.get("x-kubernetes-list-map-keys") or []
        items = out.get("items") or {}
        if not keys:
            return
        upstream = node["items"]
        name = self._ref_name(upstream)
        upstream_props = (self.schemas[name] if name else upstream).get("properties", {})
        for key in keys:
            if key in items.get("required", ()):
                continue
            if "default" not in upstream_props.get(key, {}):
                raise GenerateError(f"list-map key {key} at {self._where()} is neither "
                                    "required nor defaulted upstream")
            items["properties"][key] = _ordered(
                dict(items["properties"][key], default=upstream_props[key]["default"]))


def _ordered(schema: Schema) -> Schema:
    known = {k: schema[k] for k in _KEY_ORDER if k in schema}
    return {**known, **{k: v for k, v in schema.items() if k not in known}}


def job_template_schema(openapi: Mapping[str, Any], own: Mapping[str, Any]) -> Schema:
    """The structural schema of JobTemplateSpec from a batch/v1 OpenAPI v3 document.

    ``own`` holds the CRD's own keys for the node (:data:`OWN_KEYS`), which win.
    """
    schemas = (openapi.get("components") or {}).get("schemas") or {}
    if TEMPLATE not in schemas:
        raise GenerateError(f"{TEMPLATE} is not in the OpenAPI document")
    converter = _Converter(schemas)
    out = converter.definition(TEMPLATE)
    meta = out["properties"]["metadata"]
    # The Job template's metadata: only what the controller copies onto each Job.
    out["properties"]["metadata"] = _ordered(dict(
        meta, description=TEMPLATE_META_DESCRIPTION,
        properties={k: meta["properties"][k] for k in TEMPLATE_META_FIELDS}))
    out.update({k: copy.deepcopy(v) for k, v in own.items() if k in OWN_KEYS})
    return _ordered(out)


# -- splicing into the CRD text --------------------------------------------------------------
_KEY_LINE = re.compile(r"^(?P<indent> *)jobTemplate:\s*$")
_MARK = f"Generated by {COMMAND}"


def _header_line(version: str) -> str:
    return f"# spec.jobTemplate is generated from Kubernetes {version} batch/v1 by {COMMAND}."


def _jobtemplate_node(doc: Mapping[str, Any]) -> Schema:
    version = doc["spec"]["versions"][0]
    node: Schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "jobTemplate"]
    return node


def splice(text: str, schema: Schema, version: str) -> str:
    """``text`` (the CRD file) with its jobTemplate block replaced by ``schema``."""
    lines = text.splitlines(keepends=True)
    found = [(i, m) for i, line in enumerate(lines) if (m := _KEY_LINE.match(line))]
    if len(found) != 1:
        raise GenerateError(f"expected one 'jobTemplate:' line in the CRD, found {len(found)}")
    start, match = found[0]
    indent = len(match.group("indent"))
    end = start + 1
    while end < len(lines):
        stripped = lines[end].strip()
        if stripped and len(lines[end]) - len(lines[end].lstrip(" ")) <= indent:
            break
        end += 1
    first = start
    while first > 0 and lines[first - 1].strip().startswith(f"# {_MARK}"):
        first -= 1
    pad = " " * indent
    body = yaml.safe_dump({"jobTemplate": schema}, sort_keys=False, default_flow_style=None,
                          width=100, allow_unicode=True)
    block = [f"{pad}# {_MARK} (Kubernetes {version}); do not edit by hand.\n"]
    block += [f"{pad}{line}\n" if line else "\n" for line in body.splitlines()]
    out = lines[:first] + block + lines[end:]
    return _set_header(out, version)


def _set_header(lines: list[str], version: str) -> str:
    header = _header_line(version) + "\n"
    for i, line in enumerate(lines):
        if not line.startswith("#"):
            lines.insert(i, header)  # end of the leading comment block
            break
        if line.startswith("# spec.jobTemplate is generated"):
            lines[i] = header
            break
    return "".join(lines)


def regenerate(text: str, openapi: Mapping[str, Any], version: str) -> str:
    """The CRD text with a freshly generated jobTemplate; verified by parsing both."""
    old = load_yaml(text)
    schema = job_template_schema(openapi, _jobtemplate_node(old))
    new_text = splice(text, schema, version)
    new = load_yaml(new_text)
    expected = copy.deepcopy(old)
    version_schema = expected["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    version_schema["properties"]["spec"]["properties"]["jobTemplate"] = schema
    if new != expected:
        raise GenerateError("splicing changed more than spec.jobTemplate; nothing written")
    return new_text


# -- fetching the OpenAPI document ------------------------------------------------------------
def fetch_openapi(kubeconfig: str | None) -> tuple[dict[str, Any], str]:
    """(batch/v1 OpenAPI v3 document, server gitVersion) from a cluster."""
    sys.path.insert(0, str(ROOT))
    from pyctrl.testing.envtest import ControlPlane

    with ControlPlane(kubeconfig=kubeconfig) as cp:
        def get(path: str) -> Any:
            return json.loads(cp.kubectl("get", "--raw", path).stdout)

        index = get("/openapi/v3")
        try:
            url = index["paths"]["apis/batch/v1"]["serverRelativeURL"]
        except KeyError:
            raise GenerateError("the apiserver publishes no OpenAPI v3 for batch/v1") from None
        return get(url), str(get("/version")["gitVersion"])


def _write_if_unchanged(path: Path, original: str, new_text: str) -> bool:
    """Write ``new_text`` unless the file no longer holds ``original`` (then return False)."""
    if path.read_text() != original:
        return False
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(new_text)
    os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 (with a diff) if the CRD is out of date")
    parser.add_argument("--kubeconfig", help="use this cluster instead of a local one")
    parser.add_argument("--openapi", type=Path,
                        help="a saved /openapi/v3/apis/batch/v1 document (needs --version)")
    parser.add_argument("--version", help="the Kubernetes version of --openapi")
    parser.add_argument("--crd", type=Path, default=CRD_FILE, help="the CRD file")
    args = parser.parse_args(argv)
    if args.openapi is not None:
        if not args.version:
            parser.error("--openapi needs --version")
        openapi, version = json.loads(args.openapi.read_text()), args.version
    else:
        openapi, version = fetch_openapi(args.kubeconfig)
    for _ in range(5):
        text = args.crd.read_text()
        new_text = regenerate(text, openapi, version)
        if args.check:
            if new_text == text:
                print(f"{args.crd}: spec.jobTemplate is up to date (Kubernetes {version})")
                return 0
            diff = list(difflib.unified_diff(text.splitlines(), new_text.splitlines(),
                                             str(args.crd), "regenerated", lineterm=""))
            print("\n".join(diff[:200]))
            print(f"{args.crd}: spec.jobTemplate is out of date; run {COMMAND}",
                  file=sys.stderr)
            return 1
        if new_text == text:
            print(f"{args.crd}: unchanged")
            return 0
        if _write_if_unchanged(args.crd, text, new_text):
            print(f"{args.crd}: spec.jobTemplate regenerated from Kubernetes {version} "
                  f"({len(new_text.encode())} bytes)")
            return 0
    print(f"{args.crd} kept changing while regenerating; try again", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
