"""``python -m pyctrl gen crd MODULE[:TYPE]... [--conversion-annotation K=V]... [--out DIR]
[--check]``.

Contract: each argument names a module (every :class:`pyctrl.api.Object` subclass declared
with :func:`pyctrl.api.kind` in it) or one class in it (``MODULE:TYPE``). The classes are
grouped into CRDs (one per group and plural; several classes of one kind are its versions).
Without ``--out`` the CRDs are printed as one YAML stream. With ``--out DIR`` each is written
to ``DIR/<plural>.<group>.yaml``; with ``--check`` as well, nothing is written and the exit
status is 1, with a unified diff on stdout, when a file is missing or differs. Output is
deterministic (see :func:`pyctrl.api.crd.to_yaml`). ``--conversion-annotation`` puts an
annotation on each CRD whose conversion strategy is Webhook, and on no other (cert-manager's
``cert-manager.io/inject-ca-from``, which fills that webhook's caBundle).
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import sys
from pathlib import Path

from pyctrl.api.crd import crds, to_yaml
from pyctrl.api.schema import SchemaError
from pyctrl.api.types import Object
from pyctrl.cli import UsageError, import_user_module, read_old, write_text
from pyctrl.cli.gen_rbac import pairs

__all__ = ["add_arguments", "load_types", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("types", nargs="+", metavar="MODULE[:TYPE]",
                        help="a module (all its kinds) or one class in it")
    parser.add_argument("--conversion-annotation", action="append", default=[],
                        metavar="KEY=VALUE", help="an annotation on each CRD with a conversion "
                        "webhook (repeatable)")
    parser.add_argument("--out", type=Path, help="write DIR/<plural>.<group>.yaml files")
    parser.add_argument("--check", action="store_true",
                        help="with --out: write nothing; exit 1 with a diff if a file differs")


def load_types(specs: list[str]) -> list[type[Object]]:
    """The classes named by ``MODULE[:TYPE]`` arguments, in order, without repeats."""
    out: list[type[Object]] = []
    for spec in specs:
        module_name, _, type_name = spec.partition(":")
        module = import_user_module(module_name, spec)
        if type_name:
            found = getattr(module, type_name, None)
            if not (inspect.isclass(found) and issubclass(found, Object)
                    and hasattr(found, "__kind__")):
                raise UsageError(f"{spec} is not a pyctrl.api.Object declared with "
                                 "@pyctrl.api.kind")
            classes = [found]
        else:
            classes = [c for _, c in inspect.getmembers(module, inspect.isclass)
                       if issubclass(c, Object) and "__kind__" in vars(c)
                       and not c.__kind__.builtin
                       and c.__module__ == module.__name__]
            if not classes:
                raise UsageError(f"module {module_name} declares no kinds")
            classes.sort(key=lambda c: inspect.getsourcelines(c)[1])
        out.extend(c for c in classes if c not in out)
    return out


def run(args: argparse.Namespace) -> int:
    if args.check and args.out is None:
        raise UsageError("--check needs --out DIR")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out}: not a directory")
    annotations = pairs("--conversion-annotation", args.conversion_annotation)
    types = load_types(args.types)
    try:
        docs = crds(types)
        for doc in docs:
            if annotations and doc["spec"].get("conversion", {}).get("strategy") == "Webhook":
                doc["metadata"]["annotations"] = dict(sorted(annotations.items()))
        texts = {f"{d['metadata']['name']}.yaml": to_yaml(d, args.types) for d in docs}
    except SchemaError as err:
        raise UsageError(str(err)) from None
    except RecursionError:
        raise UsageError(f"{' '.join(args.types)}: a type is nested past Python's recursion "
                         "limit") from None
    if args.out is None:
        sys.stdout.write("---\n".join(texts.values()))
        return 0
    status = 0
    for name, text in texts.items():
        path: Path = args.out / name
        old = read_old(path)
        if args.check:
            if old != text:
                status = 1
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(keepends=True), text.splitlines(keepends=True),
                    str(path), f"{path} (generated)"))
                print(f"{path}: out of date; run python -m pyctrl gen crd "
                      f"{' '.join(args.types)} --out {args.out}", file=sys.stderr)
            continue
        if old != text:
            write_text(path, text)
            print(f"{path}: written")
    return status
