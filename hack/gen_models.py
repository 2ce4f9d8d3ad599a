"""Generate ``pyctrl/models`` (typed built-in kinds) from Kubernetes' own OpenAPI v3 spec.

Usage (project venv)::

    .venv/bin/python hack/gen_models.py              # snapshot from the spec (if found) + code
    .venv/bin/python hack/gen_models.py --check      # exit 1 if pyctrl/models is stale
    ... --spec DIR     # api/openapi-spec/v3 of k8s.io/kubernetes (default: the Go module
                       # cache's copy of the version pinned in pyctrl/testing/envtest/gomod/go.mod)

Contract:

* Input: the OpenAPI v3 documents the ``k8s.io/kubernetes`` module carries
  (``api/openapi-spec/v3``), every group/version one (:data:`DOCUMENT`: alpha and beta
  versions too). Every kind in them (a schema with ``x-kubernetes-group-version-kind``, but
  the ``...List`` ones and meta's) and every type they reference is kept, in a committed
  snapshot (``hack/models-openapi.json``: trimmed schemas, descriptions cut to their first
  sentence, each module's apiVersion, and each kind's plural, scope and status subresource
  read from its collection's paths: listed, or only created as the reviews are). Without
  the spec on disk the snapshot is the input, so generation and ``--check`` need no Go.
* Output: one module per group/version, named ``<package>_<version>`` after the spec's Go
  package (``core_v1``, ``apps_v1``, ``apiextensions_v1``, ``resource_v1beta2``, ...
  ``meta_v1``), each
  class a :class:`pyctrl.api.Struct` (``kw_only``, every field defaulted so decoding tolerates
  what the server omits). Field types: a field the spec gives a zero ``default`` (a Go value
  field) or lists as required is non-optional with its zero value (or the spec's default); a
  list or map defaults empty; anything else is ``T | None = None``. IntOrString is
  ``int | str``, Quantity ``str``, Time/MicroTime ``datetime``, a free-form object
  (RawExtension too) ``Mapping[str, object]``, any JSON value ``object``, and the CRD
  schema's two-shape fields their union (:data:`ALIASES`). Names are snake_case;
  ``name="..."`` is written where msgspec's camel renaming would not give the JSON name back
  (``podIPs``, ``$ref``), and Python keywords and type names (``bool``, ``int``) get a
  trailing underscore. Kinds with a collection subclass :class:`pyctrl.api.Object` and carry
  their KindInfo (``@kind``), so :func:`pyctrl.api.resource_for` derives their Resource; a
  subresource's body (Scale, Eviction, TokenRequest) is a plain Struct. Lists are
  ``Sequence[T] = ()`` and maps ``Mapping[str, T] = EMPTY_MAP`` (read-only types; an absent
  one allocates nothing), and classes are ``gc=False`` (decoded API objects hold no cycles;
  untracked they are smaller and cost the collector nothing): docs/DESIGN.md has the figures.
* ``meta_v1`` re-exports the hand-written :class:`pyctrl.api.ObjectMeta`,
  :class:`~pyctrl.api.OwnerReference` and :class:`~pyctrl.api.Condition` (one type for user
  kinds and built-in ones); generation fails if their fields no longer match the spec's.
* Modules import only ``meta_v1`` and ``core_v1`` (no cycle), and nothing imports them but
  a user: ``import pyctrl`` loads none of them (a unit test checks both).
* Deterministic: the same snapshot always gives the same files (a unit test regenerates into
  a temp dir and diffs).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: hack/ is sys.path[0], not the repository
    sys.path.insert(0, str(ROOT))

from hack.gen_models_code import COMMAND, generate, snake  # noqa: E402
from hack.gen_models_spec import (  # noqa: E402
    ALIASES,
    DOCUMENT,
    HAND_WRITTEN,
    INT_OR_STRING,
    META,
    NULLABLE,
    QUANTITY,
    TIMES,
    GenerateError,
    build_snapshot,
    default_spec_dir,
    first_sentence,
    module_of_prefix,
    pinned_version,
    snapshot_text,
)

__all__ = ["ALIASES", "DOCUMENT", "HAND_WRITTEN", "INT_OR_STRING", "META", "NULLABLE",
           "QUANTITY", "TIMES", "GenerateError", "build_snapshot", "default_spec_dir",
           "first_sentence", "generate", "main", "module_of_prefix", "pinned_version", "snake",
           "snapshot_text", "write"]

SNAPSHOT = ROOT / "hack" / "models-openapi.json"
OUT = ROOT / "pyctrl" / "models"


def write(files: Mapping[str, str], out: Path, check: bool) -> int:
    """Write ``files`` into ``out`` (or, with ``check``, diff them against it: 1 if stale)."""
    status = 0
    existing = {p.name for p in out.glob("*.py")} if out.is_dir() else set()
    for name in sorted(existing - set(files)):
        if check:
            print(f"{out / name}: not generated", file=sys.stderr)
            status = 1
        else:
            (out / name).unlink()
    for name, text in files.items():
        path = out / name
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        if check:
            sys.stderr.writelines(difflib.unified_diff(
                old.splitlines(keepends=True), text.splitlines(keepends=True),
                str(path), f"{path} (generated)"))
            status = 1
        else:
            out.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if status:
        print(f"pyctrl/models is stale: run {COMMAND}", file=sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", type=Path, help="api/openapi-spec/v3 of k8s.io/kubernetes")
    parser.add_argument("--out", type=Path, default=OUT, help="package directory to write")
    parser.add_argument("--check", action="store_true", help="write nothing; 1 if stale")
    args = parser.parse_args(argv)
    version = pinned_version()
    spec_dir = args.spec or default_spec_dir(version)
    if spec_dir is not None:
        text = snapshot_text(build_snapshot(spec_dir, version))
        old = SNAPSHOT.read_text() if SNAPSHOT.exists() else ""
        if text != old:
            if args.check:
                print(f"{SNAPSHOT} differs from {spec_dir}: run {COMMAND}", file=sys.stderr)
                return 1
            SNAPSHOT.write_text(text)
    elif not args.check:
        print(f"no spec for {version} (go mod download k8s.io/kubernetes@{version}); "
              f"generating from {SNAPSHOT}", file=sys.stderr)
    snapshot = json.loads(SNAPSHOT.read_text())
    return write(generate(snapshot), args.out, args.check)


if __name__ == "__main__":
    sys.exit(main())
