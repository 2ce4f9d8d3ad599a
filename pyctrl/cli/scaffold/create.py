"""``pyctrl create api --kind K [--version V]`` and ``pyctrl create webhook --kind K
[--conversion]`` (both ``[--dir PATH] [--force] [--no-manifests]``), in a project
``pyctrl init`` made.

Contract: see :mod:`pyctrl.cli.scaffold`. ``create api`` refuses a kind already in
``PROJECT`` with that version (a new version of it adds that version), ``create webhook`` a
kind not in it, ``--conversion`` a kind with one version, and a kind that has what is asked
already (``--force`` scaffolds it again); exit 2 with one line, nothing written. The new
files are listed, one line each, and ``PROJECT`` records the kind, its versions and webhooks.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from pyctrl.cli import UsageError
from pyctrl.cli.scaffold import api_module, generate_manifests, kind_values
from pyctrl.cli.scaffold.plan import Plan
from pyctrl.cli.scaffold.project import (
    PROJECT_FILE,
    Project,
    Resource,
    check_kind,
    check_version,
    load,
)
from pyctrl.cli.scaffold.render import files

__all__ = ["add_arguments", "run"]

WIRING = "{package}/wiring.py"
DEFAULT_KUSTOMIZATION = "config/default/kustomization.yaml"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    subs = parser.add_subparsers(dest="what", required=True, metavar="WHAT")
    api = subs.add_parser("api", help="a kind and its controller",
                          description="Add a kind (its API module), its controller, its "
                          "wiring, a sample and tests to the project.")
    webhook = subs.add_parser("webhook", help="a kind's defaulting and validating webhook",
                              description="Add a defaulting and a validating admission "
                              "webhook for a kind of the project.")
    for sub in (api, webhook):
        sub.add_argument("--kind", required=True, help="the kind, CamelCase (Backup)")
        sub.add_argument("--dir", type=Path, default=Path("."),
                         help="the project (default: the current directory)")
        sub.add_argument("--force", action="store_true",
                         help="rewrite the scaffold's files even where they exist")
        sub.add_argument("--no-manifests", action="store_true",
                         help="do not run pyctrl gen crd/rbac/webhook afterwards")
    api.add_argument("--version", default="v1", help="the API version (default v1); a new "
                     "version of a kind in the project adds that version (served, not stored)")
    webhook.add_argument("--conversion", action="store_true",
                         help="also a conversion webhook between the kind's versions")


def _api(root: Path, project: Project, args: argparse.Namespace) -> tuple[Plan, Project]:
    kind, version = check_kind(args.kind), check_version(args.version)
    old = project.resource(kind)
    if old is not None and version != old.version and (args.force or version not in old.spokes):
        return _version(root, project, old, version, args.force)
    if old is not None and not args.force:
        raise UsageError(f"kind {kind} is in {root / PROJECT_FILE} already: its files are "
                         "yours now (--force scaffolds them again over yours; --version "
                         "VERSION adds another version)")
    res = Resource(kind, version) if old is None else old
    project = project.with_resource(res)
    values = kind_values(project, res, version)
    plan = Plan(root, force=args.force)
    for path, text in files("api", values).items():
        plan.once(path, text)
    wiring = WIRING.format(package=project.package)
    plan.insert(wiring, "imports", f"from {project.package}.controllers.{res.lower} import "
                f"setup as setup_{res.lower}", below=True)
    plan.insert(wiring, "setup", f"    setup_{res.lower}(manager)")
    plan.insert("Makefile", "api-modules", f"API_MODULES += {api_module(project, res, version)}")
    if res.conversion:  # --force: the module written again declares the conversion again
        _declare_conversion(plan, project, res, (version,))
    return plan, project


def _version(root: Path, project: Project, res: Resource, version: str,
             force: bool) -> tuple[Plan, Project]:
    """Another version of a kind: its API module only (served, not stored; no controller,
    no sample), declared with the kind's conversion when it has one."""
    if version not in res.spokes:
        res = replace(res, spokes=(*res.spokes, version))
    project = project.with_resource(res)
    plan = Plan(root, force=force)
    module = f"{project.package}/api/{version}/"
    for path, text in files("api", kind_values(project, res, version)).items():
        if path.startswith(module):
            plan.once(path, text)
    plan.insert("Makefile", "api-modules", f"API_MODULES += {api_module(project, res, version)}")
    if res.conversion:
        _declare_conversion(plan, project, res, (version,))
    return plan, project


def _declare_conversion(plan: Plan, project: Project, res: Resource,
                        versions: tuple[str, ...]) -> None:
    """``versions`` of ``res`` declare its conversion webhook; the spokes among them are
    registered on its converter."""
    pkg = project.package
    for version in versions:
        path = f"{api_module(project, res, version).replace('.', '/')}.py"
        plan.insert(path, "imports", f"from {pkg}.api.{res.lower}_conversion import CONVERSION",
                    below=True)
        plan.insert(path, "kind-options", "    conversion=CONVERSION,")
        if version != res.version:
            module = f"{pkg}/webhooks/{res.lower}_conversion.py"
            plan.insert(module, "imports", f"from {pkg}.api.{version} import {res.lower} as "
                        f"{version}", below=True)
            plan.insert(module, "spokes", f"    add_spoke(conversion, {version}.{res.kind})")


def _webhook(root: Path, project: Project, args: argparse.Namespace) -> tuple[Plan, Project]:
    kind = check_kind(args.kind)
    res = project.resource(kind)
    if res is None:
        raise UsageError(f"kind {kind} is not in {root / PROJECT_FILE}: "
                         f"`pyctrl create api --kind {kind}` first")
    if args.conversion and not res.spokes:
        raise UsageError(f"kind {kind} has one version ({res.version}): a conversion webhook "
                         f"converts between versions; `pyctrl create api --kind {kind} "
                         "--version v2` first")
    if res.webhook and (res.conversion or not args.conversion) and not args.force:
        what = "its webhooks" if res.conversion else "its webhook"
        raise UsageError(f"kind {kind} has {what} already (--force scaffolds it again)")
    conversion = args.conversion and (args.force or not res.conversion)
    res = replace(res, webhook=True, conversion=res.conversion or args.conversion)
    project = project.with_resource(res)
    plan = Plan(root, force=args.force)
    values = kind_values(project, res)
    for path, text in files("webhook", values).items():
        plan.once(path, text)
    wiring = WIRING.format(package=project.package)
    plan.insert(wiring, "imports", f"from {project.package}.webhooks.{res.lower} import "
                f"register as register_{res.lower}", below=True)
    plan.insert(wiring, "webhooks", f"    register_{res.lower}(server)")
    plan.insert("Makefile", "webhooks", f"WEBHOOKS += {res.lower}")
    plan.insert(DEFAULT_KUSTOMIZATION, "components", "  - ../webhook")
    if conversion:
        for path, text in files("conversion", values).items():
            plan.once(path, text)
        plan.insert(wiring, "imports", f"from {project.package}.webhooks.{res.lower}_conversion "
                    f"import register as register_{res.lower}_conversion", below=True)
        plan.insert(wiring, "webhooks", f"    register_{res.lower}_conversion(server)")
        _declare_conversion(plan, project, res, res.versions)
    return plan, project


def run(args: argparse.Namespace) -> int:
    root: Path = args.dir
    project = load(root)
    plan, project = (_api if args.what == "api" else _webhook)(root, project, args)
    plan.always(PROJECT_FILE, project.dump())
    for line in plan.apply():
        print(line)
    if not args.no_manifests:
        problems = generate_manifests(root, project)
        for problem in problems:
            print(f"error: {problem}")
        if problems:
            print("error: the files are written; fix the problem, then `make manifests`")
            return 1
    return 0
