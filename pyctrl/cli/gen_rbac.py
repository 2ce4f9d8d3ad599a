"""``python -m pyctrl gen rbac MODULE:setup [--name N] [--namespace NS] [--leader-elect]
[--metrics-secure] [--service-account NAME] [--label K=V]... [--out FILE | --check FILE]``.

Contract: ``MODULE:setup`` names a function taking a :class:`pyctrl.Manager`; it is called
once on a Manager over an in-memory client (:class:`pyctrl.testing.FakeClient`) that is never
run, configured by the flags as the deployed controller is (``--leader-elect``: a Lease in
``--namespace``; ``--metrics-secure``: /metrics behind TokenReview + SubjectAccessReview).
What it declared is turned into roles by :func:`pyctrl.rbac.derive` (see there for what each
declaration grants) and written by :func:`pyctrl.rbac.to_yaml`: the ClusterRole ``--name``
and, with leader election, the Role ``<name>-leader-election`` in ``--namespace``; with
``--service-account`` also their bindings to that ServiceAccount of ``--namespace``.
Without ``--out``/``--check`` the YAML goes to stdout. ``--check FILE`` writes nothing and
exits 1 with a unified diff when FILE differs. Output is deterministic.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable
from pathlib import Path

from pyctrl.cli import UsageError, call_setup, import_user_module, read_old, write_text

__all__ = ["add_arguments", "check_or_write", "command_line", "load_setup", "pairs", "render",
           "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("setup", metavar="MODULE:FUNCTION",
                        help="a function setup(manager) building the controllers")
    parser.add_argument("--name", default="", help="the ClusterRole's name (default: the "
                        "module's top package with dashes)")
    parser.add_argument("--namespace", default="default",
                        help="the controller's namespace: its leader-election Lease and "
                             "ServiceAccount (default: default)")
    parser.add_argument("--leader-elect", action="store_true",
                        help="the controller runs leader election (a Role for its Lease)")
    parser.add_argument("--metrics-secure", action="store_true",
                        help="/metrics is served behind TokenReview + SubjectAccessReview")
    parser.add_argument("--service-account", default="",
                        help="also bind the roles to this ServiceAccount of --namespace")
    parser.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                        help="a label on every object (repeatable)")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--out", type=Path, help="write the YAML to this file")
    out.add_argument("--check", type=Path, metavar="FILE",
                     help="write nothing; exit 1 with a diff if FILE differs")


def load_setup(spec: str) -> Callable[..., object]:
    """The function named by ``MODULE:FUNCTION`` (the current directory importable)."""
    module_name, sep, function = spec.partition(":")
    if not sep or not module_name or not function:
        raise UsageError(f"{spec!r}: expected MODULE:FUNCTION")
    module = import_user_module(module_name, spec)
    found = getattr(module, function, None)
    if not callable(found):
        raise UsageError(f"{spec}: {module_name} has no function {function!r}")
    return found  # type: ignore[no-any-return]


def command_line(generator: str, setup: str, flags: list[tuple[str, str | None]],
                 switches: tuple[str, ...] = (), sep: str = " \\\n    ") -> str:
    """The command that regenerates a file: ``flags`` with a value (None/"" left out), then
    ``switches``, one per line."""
    words = [f"python -m pyctrl {generator}", setup]
    words += [f"{flag} {value}" for flag, value in flags if value]
    words += list(switches)
    return sep.join(words)


def pairs(flag: str, values: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` arguments of ``flag`` as a dict (UsageError for another shape)."""
    out = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise UsageError(f"{flag} {value!r}: expected KEY=VALUE")
        out[key] = val
    return out


def check_or_write(text: str, args: argparse.Namespace, generator: str) -> int:
    """``--check FILE`` (exit 1 with a diff when it differs), ``--out FILE``, or stdout."""
    if args.check is not None:
        path = Path(args.check)
        old = read_old(path)
        if old == text:
            return 0
        sys.stdout.writelines(difflib.unified_diff(
            old.splitlines(keepends=True), text.splitlines(keepends=True),
            str(path), f"{path} (generated)"))
        print(f"{path}: out of date; regenerate it with python -m pyctrl {generator} "
              f"... --out {path} (the command is in its header)", file=sys.stderr)
        return 1
    if args.out is not None:
        path = Path(args.out)
        if read_old(path) != text or not path.exists():
            write_text(path, text)
            print(f"{path}: written")
        return 0
    sys.stdout.write(text)
    return 0


def render(args: argparse.Namespace) -> str:
    """The YAML for parsed ``args`` (see module docstring)."""
    from pyctrl import LeaderElectionOptions, Manager, ManagerOptions, MetricsOptions
    from pyctrl.rbac import Declarations, derive, to_yaml
    from pyctrl.testing import FakeClient

    setup = load_setup(args.setup)
    labels = pairs("--label", args.label)
    name = args.name or args.setup.partition(":")[0].split(".")[0].replace("_", "-")
    election = (LeaderElectionOptions(id=name, namespace=args.namespace)
                if args.leader_elect else None)
    declarations = Declarations()  # what setup declares, read below
    manager = Manager(FakeClient(), ManagerOptions(
        leader_election=election,
        metrics=MetricsOptions(secure=args.metrics_secure, runtime_metrics=False)),
        declarations=declarations)
    try:
        call_setup(setup, manager, args.setup)
        roles = derive(manager, declarations)
    finally:
        declarations.discard()
    flags = [("--name", args.name),
             ("--namespace", args.namespace if args.namespace != "default" else None)]
    switches = tuple(f for f, on in (("--leader-elect", args.leader_elect),
                                     ("--metrics-secure", args.metrics_secure)) if on)
    flags2 = [("--service-account", args.service_account),
              *(("--label", label) for label in args.label)]
    header = ("Generated: do not edit. Least privilege, from what the controllers declare\n"
              "(pyctrl.rbac says what each declaration grants). Regenerate with:\n  "
              + command_line("gen rbac", args.setup, flags, switches)
              + "".join(f" \\\n    {f} {v}" for f, v in flags2 if v) + " \\\n    --out FILE")
    account = (args.namespace, args.service_account) if args.service_account else None
    return to_yaml(roles, name=name, labels=labels, service_account=account, header=header)


def run(args: argparse.Namespace) -> int:
    return check_or_write(render(args), args, "gen rbac")
