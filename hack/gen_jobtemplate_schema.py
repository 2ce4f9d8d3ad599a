"""Refresh the Kubernetes OpenAPI snapshot ``gen crd`` embeds from, and check it against a cluster.

Usage (project venv)::

    .venv/bin/python hack/gen_jobtemplate_schema.py            # snapshot + regenerate the CRD
    .venv/bin/python hack/gen_jobtemplate_schema.py --check    # exit 1 if either is out of date
    ... --kubeconfig PATH    # read the schema from that cluster instead of a local one
    ... --openapi FILE       # read a saved /openapi/v3/apis/batch/v1 document instead

Contract:

* The source of truth is the batch/v1 OpenAPI v3 document the running kube-apiserver
  publishes (``GET /openapi/v3`` names it). Without ``--kubeconfig``/``--openapi`` a
  throwaway local control plane (:class:`pyctrl.testing.envtest.ControlPlane`, the pinned
  Kubernetes version) serves it.
* Writing: ``pyctrl/api/kubernetes-openapi.json`` becomes the snapshot of that document
  (:func:`pyctrl.api.openapi.snapshot_document`), then the CronJob CRD is regenerated from
  its types (``python -m pyctrl gen crd cronjob_controller.crd --out crds``), whose
  ``spec.jobTemplate`` is expanded from the snapshot (:class:`pyctrl.api.Embedded`).
* ``--check`` writes nothing and exits 1 when the snapshot differs from the document, or when
  the CRD file's ``spec.jobTemplate`` (parsed) differs from the schema the converter makes
  from the document (so a hand edit inside the subtree is reported, with a diff). That
  the whole CRD is what its types generate is ``gen crd --check``'s job (a unit test).
* The conversion itself (``$ref`` inlining, IntOrString/Quantity, dropped extensions,
  list-map defaults, ObjectMeta trimming) lives in :mod:`pyctrl.api.openapi`; this script
  keeps the CronJob's own choices for the template's top (:data:`TEMPLATE_META_FIELDS`,
  :data:`OWN_KEYS`).
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CRD_FILE = ROOT / "crds" / "cronjobs.batch.pyctrl.io.yaml"
COMMAND = "hack/gen_jobtemplate_schema.py"
sys.path.insert(0, str(ROOT))

from pyctrl.api.openapi import (  # noqa: E402  (the converter lives in the library)
    SNAPSHOT_FILE,
    GenerateError,
    embedded_schema,
    ordered,
    snapshot,
    snapshot_document,
)

TEMPLATE = "io.k8s.api.batch.v1.JobTemplateSpec"
# ObjectMeta fields kept on the Job template's own metadata (the controller copies only these;
# nested templates keep controller-gen's embedded set, see pyctrl.api.openapi).
TEMPLATE_META_FIELDS = ("annotations", "labels")
TEMPLATE_META_DESCRIPTION = "Labels and annotations, copied to each Job (nothing else is)."
# Keys of the jobTemplate node itself that the CRD owns and regeneration keeps: its description,
# and ``required: [spec]`` (a template without a Job spec can never run).
OWN_KEYS = ("description", "required")
Schema = dict[str, Any]
# libyaml when PyYAML has it: the CRD is about 190 KB and pure-Python parsing takes seconds.
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """Parse one YAML document with the safe loader (libyaml's when available)."""
    return yaml.load(text, Loader=_Loader)  # a safe loader either way


def job_template_schema(openapi: Mapping[str, Any], own: Mapping[str, Any]) -> Schema:
    """The structural schema of JobTemplateSpec from a batch/v1 OpenAPI v3 document.

    ``own`` holds the CRD's own keys for the node (:data:`OWN_KEYS`), which win.
    """
    out = embedded_schema(openapi, TEMPLATE, metadata_fields=TEMPLATE_META_FIELDS,
                          metadata_description=TEMPLATE_META_DESCRIPTION)
    out.update({k: copy.deepcopy(v) for k, v in own.items() if k in OWN_KEYS})
    return ordered(out)


# -- fetching the OpenAPI document ------------------------------------------------------------
def fetch_openapi(kubeconfig: str | None) -> tuple[dict[str, Any], str]:
    """(batch/v1 OpenAPI v3 document, server gitVersion) from a cluster."""
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


def _snapshot_text(openapi: Mapping[str, Any], version: str) -> str:
    return json.dumps(snapshot_document(openapi, version), indent=1, sort_keys=True) + "\n"


def _check(openapi: Mapping[str, Any], version: str, crd: Path) -> int:
    status = 0
    if SNAPSHOT_FILE.read_text() != _snapshot_text(openapi, version):
        print(f"{SNAPSHOT_FILE}: out of date for Kubernetes {version}; run {COMMAND}",
              file=sys.stderr)
        status = 1
    node = _jobtemplate_node(load_yaml(crd.read_text()))
    want = job_template_schema(openapi, node)
    if node != want:
        have_text = json.dumps(node, indent=1, sort_keys=True).splitlines()
        want_text = json.dumps(want, indent=1, sort_keys=True).splitlines()
        diff = difflib.unified_diff(have_text, want_text, f"{crd} spec.jobTemplate",
                                    f"Kubernetes {version}", lineterm="")
        print("\n".join(list(diff)[:200]))
        print(f"{crd}: spec.jobTemplate is out of date; run {COMMAND}", file=sys.stderr)
        status = 1
    if status == 0:
        print(f"{SNAPSHOT_FILE} and {crd}: up to date (Kubernetes {version})")
    return status


def _jobtemplate_node(doc: Mapping[str, Any]) -> Schema:
    version = doc["spec"]["versions"][0]
    node: Schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "jobTemplate"]
    return node


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 (with a diff) if anything is out of date")
    parser.add_argument("--kubeconfig", help="use this cluster instead of a local one")
    parser.add_argument("--openapi", type=Path,
                        help="a saved /openapi/v3/apis/batch/v1 document (needs --version)")
    parser.add_argument("--version", help="the Kubernetes version of --openapi")
    parser.add_argument("--crd", type=Path, default=CRD_FILE, help="the CRD file to check")
    args = parser.parse_args(argv)
    if args.openapi is not None:
        if not args.version:
            parser.error("--openapi needs --version")
        openapi, version = json.loads(args.openapi.read_text()), args.version
    else:
        openapi, version = fetch_openapi(args.kubeconfig)
    if args.check:
        return _check(openapi, version, args.crd)
    text = _snapshot_text(openapi, version)
    SNAPSHOT_FILE.write_text(text)
    print(f"{SNAPSHOT_FILE}: written from Kubernetes {version} ({len(text)} bytes)")
    snapshot.cache_clear()
    from pyctrl.cli import main as pyctrl_main

    return pyctrl_main(["gen", "crd", "cronjob_controller.crd", "--out",
                        str(CRD_FILE.parent)])


if __name__ == "__main__":
    sys.exit(main())
