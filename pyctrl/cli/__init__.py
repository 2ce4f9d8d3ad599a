"""``python -m pyctrl`` (or the ``pyctrl`` console script): the command line (``gen crd``,
``gen rbac``, ``run``, ``--version``; more plug in the same way).

Contract: :func:`main` parses ``argv`` and returns the exit code. Each command is a
:class:`Command`: a name, a one-line help, a function adding its arguments to an argparse
parser and a function running it. Commands under ``gen`` are listed in
:data:`GEN_COMMANDS`, top-level ones in :data:`COMMANDS`; a new command is one entry there
(its module is imported only when that command runs, so ``--help`` stays fast). Errors the
user can fix (an unimportable module, a type that cannot be a schema) print one line on
stderr and exit 2; ``--check`` differences exit 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyctrl._version import __version__

__all__ = ["COMMANDS", "GEN_COMMANDS", "Command", "UsageError", "main"]


class UsageError(Exception):
    """A problem the user can fix; printed as one line, exit status 2."""


@dataclass(frozen=True, slots=True)
class Command:
    """A subcommand implemented by ``module`` (its ``add_arguments`` and ``run``)."""

    name: str
    help: str
    module: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        module = importlib.import_module(self.module)
        add: Callable[[argparse.ArgumentParser], None] = module.add_arguments
        add(parser)

    def run(self, args: argparse.Namespace) -> int:
        run: Callable[[argparse.Namespace], int] = importlib.import_module(self.module).run
        return run(args)


GEN_COMMANDS: tuple[Command, ...] = (
    Command("crd", "CustomResourceDefinitions from API types (pyctrl.api)", "pyctrl.cli.gen_crd"),
    Command("rbac", "ClusterRole/Role from a setup(manager) function's controllers "
            "(pyctrl.rbac)", "pyctrl.cli.gen_rbac"),
    Command("webhook", "Mutating/ValidatingWebhookConfiguration from a setup(manager)'s "
            "admission handlers (pyctrl.webhook.Admission)", "pyctrl.cli.gen_webhook"),
)
COMMANDS: tuple[Command, ...] = (
    Command("run", "run setup(manager)'s controllers on a local control plane (or --context) "
            "with the CRDs installed, until Ctrl-C", "pyctrl.cli.devrun"),
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pyctrl",
                                     description="pyctrl's generators and tools")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    top = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    gen = top.add_parser("gen", help="generate manifests from code")
    gens = gen.add_subparsers(dest="generator", required=True, metavar="GENERATOR")
    for command in GEN_COMMANDS:
        sub = gens.add_parser(command.name, help=command.help, description=command.help)
        command.add_arguments(sub)
        sub.set_defaults(command_obj=command)
    for command in COMMANDS:
        sub = top.add_parser(command.name, help=command.help, description=command.help)
        command.add_arguments(sub)
        sub.set_defaults(command_obj=command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    command: Command = args.command_obj
    try:
        return command.run(args)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
