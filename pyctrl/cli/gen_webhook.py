"""``python -m pyctrl gen webhook MODULE:setup (--service NS/NAME[:PORT] | --url BASE)
[--name N] [--label K=V]... [--annotation K=V]... [--out FILE | --check FILE]``.

Contract: ``setup(manager)`` is called on a Manager that never runs (as ``gen rbac`` does);
every :class:`pyctrl.webhook.WebhookServer` it adds (``manager.add(server)``) contributes
its handlers registered with an :class:`pyctrl.webhook.Admission`. The Mutating- and
ValidatingWebhookConfiguration named ``--name`` are written
(:mod:`pyctrl.webhook.configuration`), calling the Service ``--service`` (port 443 unless
given) or the URL base ``--url`` with each handler's path. No handler with an Admission is a
usage error (exit 2); ``--check FILE`` writes nothing and exits 1 with a diff when FILE
differs.
"""

from __future__ import annotations

import argparse

from pyctrl.cli import UsageError, call_setup
from pyctrl.cli.gen_rbac import check_or_write, command_line, load_setup, pairs

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("setup", metavar="MODULE:FUNCTION",
                        help="a function setup(manager) adding a WebhookServer")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--service", help="NAMESPACE/NAME[:PORT] of the webhook's Service")
    target.add_argument("--url", help="a URL base (https://host:port) the paths are added to")
    parser.add_argument("--name", default="", help="the configurations' name (default: the "
                        "module's top package with dashes)")
    parser.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--annotation", action="append", default=[], metavar="KEY=VALUE")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--out", help="write the YAML to this file")
    out.add_argument("--check", metavar="FILE",
                     help="write nothing; exit 1 with a diff if FILE differs")


def _target(args: argparse.Namespace) -> object:
    from pyctrl.webhook import ServiceTarget

    if args.url:
        if not args.url.startswith("https://"):
            raise UsageError("--url must start with https://")
        return args.url
    namespace, sep, rest = args.service.partition("/")
    name, _, port = rest.partition(":")
    if not sep or not namespace or not name or (port and not port.isdigit()):
        raise UsageError(f"--service {args.service!r}: expected NAMESPACE/NAME[:PORT]")
    return ServiceTarget(namespace, name, int(port) if port else 443)


def render(args: argparse.Namespace) -> str:
    from pyctrl import Manager
    from pyctrl.rbac import Declarations
    from pyctrl.testing import FakeClient
    from pyctrl.webhook import Admission, ServiceTarget, WebhookServer
    from pyctrl.webhook.configuration import configurations, to_yaml

    setup = load_setup(args.setup)
    target = _target(args)
    assert isinstance(target, ServiceTarget | str)
    declarations = Declarations()
    manager = Manager(FakeClient(), declarations=declarations)
    try:
        call_setup(setup, manager, args.setup)
    finally:
        declarations.discard()
    admission: dict[str, Admission] = {}
    for entry in manager.runnables():
        if isinstance(entry.runnable, WebhookServer):
            admission.update(entry.runnable.admission)
    if not admission:
        raise UsageError(f"{args.setup} adds no WebhookServer with a handler registered "
                         "with an Admission")
    name = args.name or args.setup.partition(":")[0].split(".")[0].replace("_", "-")
    flags = [("--service", args.service), ("--url", args.url), ("--name", args.name),
             *(("--label", v) for v in args.label),
             *(("--annotation", v) for v in args.annotation)]
    header = ("Generated: do not edit. From the handlers' pyctrl.webhook.Admission.\n"
              "Regenerate with:\n  " + command_line("gen webhook", args.setup, flags)
              + " \\\n    --out FILE")
    return to_yaml(configurations(admission, target), name=name,
                   labels=pairs("--label", args.label),
                   annotations=pairs("--annotation", args.annotation), header=header)


def run(args: argparse.Namespace) -> int:
    return check_or_write(render(args), args, "gen webhook")
