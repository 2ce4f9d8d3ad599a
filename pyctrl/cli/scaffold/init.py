"""``pyctrl init NAME --group G [--domain D] [--dir PATH] [--force] [--no-manifests]``.

Contract: see :mod:`pyctrl.cli.scaffold`. Run again on a project it made (same name, group
and domain in ``PROJECT``) it writes only the files that are missing; a ``PROJECT`` of
another project there is refused (exit 2), as is a name, group or domain that cannot be
one. Prints one line per file (``created``/``kept``/``unchanged``/``updated``) and the next
commands.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pyctrl.cli import UsageError
from pyctrl.cli.scaffold import generate_manifests, project_values
from pyctrl.cli.scaffold.plan import Plan
from pyctrl.cli.scaffold.project import PROJECT_FILE, Project, load
from pyctrl.cli.scaffold.render import files

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the project: a DNS label (backup-operator); the "
                        "package is the name with dashes as underscores")
    parser.add_argument("--group", required=True,
                        help="the API group's first part (the group is GROUP.DOMAIN)")
    parser.add_argument("--domain", default="example.com",
                        help="the API group's domain (default example.com)")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where to write it (default ./NAME)")
    parser.add_argument("--force", action="store_true",
                        help="rewrite the scaffold's files even where they exist")
    parser.add_argument("--no-manifests", action="store_true",
                        help="do not run pyctrl gen rbac afterwards")


def run(args: argparse.Namespace) -> int:
    project = Project(name=args.name, group=args.group, domain=args.domain)
    root: Path = args.dir if args.dir is not None else Path(args.name)
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root}: exists and is not a directory")
    if (root / PROJECT_FILE).exists():
        old = load(root)
        if (old.name, old.group, old.domain) != (project.name, project.group, project.domain):
            raise UsageError(
                f"{root / PROJECT_FILE}: already the project {old.name!r} (group "
                f"{old.api_group}); init another directory, or `pyctrl create api` here")
        project = old
    plan = Plan(root, force=args.force)
    for path, text in files("init", project_values(project)).items():
        plan.once(path, text)
    plan.always(PROJECT_FILE, project.dump())
    for line in plan.apply():
        print(line)
    if not args.no_manifests:
        problems = generate_manifests(root, project)
        for problem in problems:
            print(f"error: {problem}")
        if problems:
            return 1
    print(f"next: cd {root} && pyctrl create api --kind Kind   (then: make test, make run)")
    return 0
