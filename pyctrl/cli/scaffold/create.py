"""``pyctrl create api --kind K [--version V]`` and ``pyctrl create webhook --kind K``
(both ``[--dir PATH] [--force] [--no-manifests]``), in a project ``pyctrl init`` made.

Contract: see :mod:`pyctrl.cli.scaffold`. ``create api`` refuses a kind already in
``PROJECT`` and ``create webhook`` a kind not in it, or one that has its webhook already
(``--force`` scaffolds it again); exit 2 with one line, nothing written. The new files are
listed, one line each, and ``PROJECT`` records the kind (or its webhook).
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
    api.add_argument("--version", default="v1", help="the API version (default v1)")


def _api(root: Path, project: Project, args: argparse.Namespace) -> tuple[Plan, Project]:
    res = Resource(check_kind(args.kind), check_version(args.version))
    if project.resource(res.kind) is not None and not args.force:
        raise UsageError(f"kind {res.kind} is in {root / PROJECT_FILE} already: its files "
                         "are yours now (--force scaffolds them again over yours)")
    project = project.with_resource(res)
    values = kind_values(project, res)
    plan = Plan(root, force=args.force)
    for path, text in files("api", values).items():
        plan.once(path, text)
    wiring = WIRING.format(package=project.package)
    plan.insert(wiring, "imports", f"from {project.package}.controllers.{res.lower} import "
                f"setup as setup_{res.lower}", below=True)
    plan.insert(wiring, "setup", f"    setup_{res.lower}(manager)")
    plan.insert("Makefile", "api-modules", f"API_MODULES += {api_module(project, res)}")
    return plan, project


def _webhook(root: Path, project: Project, args: argparse.Namespace) -> tuple[Plan, Project]:
    kind = check_kind(args.kind)
    res = project.resource(kind)
    if res is None:
        raise UsageError(f"kind {kind} is not in {root / PROJECT_FILE}: "
                         f"`pyctrl create api --kind {kind}` first")
    if res.webhook and not args.force:
        raise UsageError(f"kind {kind} has its webhook already (--force scaffolds it again)")
    res = replace(res, webhook=True)
    project = project.with_resource(res)
    plan = Plan(root, force=args.force)
    for path, text in files("webhook", kind_values(project, res)).items():
        plan.once(path, text)
    wiring = WIRING.format(package=project.package)
    plan.insert(wiring, "imports", f"from {project.package}.webhooks.{res.lower} import "
                f"register as register_{res.lower}", below=True)
    plan.insert(wiring, "webhooks", f"    register_{res.lower}(server)")
    plan.insert("Makefile", "webhooks", f"WEBHOOKS += {res.lower}")
    plan.insert(DEFAULT_KUSTOMIZATION, "components", "  - ../webhook")
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
