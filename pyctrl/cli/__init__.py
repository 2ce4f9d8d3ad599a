"""``python -m pyctrl`` (or the ``pyctrl`` console script): the command line (``gen crd``,
``gen rbac``, ``gen webhook``, ``run``, ``envtest``, ``init``, ``create``, ``--version``;
more plug in the same way).

Contract: :func:`main` parses ``argv`` and returns the exit code. Each command is a
:class:`Command`: a name, a one-line help, a function adding its arguments to an argparse
parser and a function running it. Commands under ``gen`` are listed in
:data:`GEN_COMMANDS`, top-level ones in :data:`COMMANDS`; a new command is one entry there
(its module is imported only when that command runs, so ``--help`` stays fast). Errors the
user can fix print one line on stderr and exit 2, never a traceback: a module name that is
not one, a module that is missing, does not compile or raises while it is imported
(:func:`import_user_module`), a type that cannot be a schema or is nested past Python's
recursion limit, an ``--out`` path that is a file where a directory is wanted or the other
way round (:func:`write_text`), a ``--crd`` file that is not YAML or holds something other
than CustomResourceDefinitions. ``--check`` differences exit 1.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyctrl._version import __version__

__all__ = ["COMMANDS", "GEN_COMMANDS", "Command", "UsageError", "call_setup",
           "import_user_module", "main", "read_old", "write_text"]

_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


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
    Command("init", "a new operator project (pyproject, package, tests, Dockerfile, "
            "manifests, Makefile)", "pyctrl.cli.scaffold.init"),
    Command("create", "add a kind and its controller (create api) or its webhook "
            "(create webhook) to a project", "pyctrl.cli.scaffold.create"),
    Command("crd", "CustomResourceDefinitions from API types (pyctrl.api)", "pyctrl.cli.gen_crd"),
    Command("rbac", "ClusterRole/Role from a setup(manager) function's controllers "
            "(pyctrl.rbac)", "pyctrl.cli.gen_rbac"),
    Command("webhook", "Mutating/ValidatingWebhookConfiguration from a setup(manager)'s "
            "admission handlers (pyctrl.webhook.Admission)", "pyctrl.cli.gen_webhook"),
)
COMMANDS: tuple[Command, ...] = (
    Command("init", "a new operator project (pyproject, package, tests, Dockerfile, "
            "manifests, Makefile)", "pyctrl.cli.scaffold.init"),
    Command("create", "add a kind and its controller (create api) or its webhook "
            "(create webhook) to a project", "pyctrl.cli.scaffold.create"),
    Command("run", "run setup(manager)'s controllers on a local control plane (or --context) "
            "with the CRDs installed, until Ctrl-C", "pyctrl.cli.devrun"),
    Command("envtest", "the control-plane binaries for pyctrl.testing.envtest and `pyctrl "
            "run`: install (builds them; needs Go on PATH), list, path", "pyctrl.cli.envtest"),
)


def import_user_module(name: str, spec: str) -> types.ModuleType:
    """The user's module ``name`` (from the argument ``spec``), the current directory
    importable as ``python -m`` makes it; every way it can fail is a :class:`UsageError`."""
    if not _MODULE_NAME.fullmatch(name):
        raise UsageError(f"{spec!r}: {name!r} is not a module name")
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # the user's project, as `python -m` would
    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise UsageError(f"cannot import {name!r}: {err}") from None
    except SyntaxError as err:
        raise UsageError(f"cannot import {name!r}: {err.filename}:{err.lineno}: "
                         f"{err.msg}") from None
    except RecursionError:
        raise UsageError(f"cannot import {name!r}: nested past Python's recursion "
                         "limit") from None
    except Exception as err:
        where = _user_frame(err)
        raise UsageError(f"cannot import {name!r}: {type(err).__name__}: {err}"
                         f"{f' (at {where})' if where else ''}") from None


def _user_frame(err: BaseException) -> str:
    """``file:line`` of the innermost frame of ``err``'s traceback."""
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else ""


def call_setup(setup: Callable[..., object], manager: object, spec: str) -> None:
    """``setup(manager)`` for a generator; what it raises is a UsageError."""
    try:
        setup(manager)
    except UsageError:
        raise
    except Exception as err:
        where = _user_frame(err)
        raise UsageError(f"{spec} raised {type(err).__name__}: {err}"
                         f"{f' (at {where})' if where else ''}") from None


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, making its directory; a path that can not be written (a
    file where a directory is wanted, a directory where a file is) is a UsageError."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as err:
        raise UsageError(f"cannot write {path}: {err.strerror or err}") from None


def read_old(path: Path) -> str:
    """The text at ``path`` ("" when missing); a directory there is a UsageError."""
    try:
        return path.read_text() if path.exists() else ""
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror or err}") from None


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
    except RecursionError:  # a user's type or document nested past the limit
        print("error: the input is nested past Python's recursion limit", file=sys.stderr)
        return 2
