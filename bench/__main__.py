"""``python -m bench <name> [options] [--json]``: run one benchmark and print its result.

Each subcommand is a module exposing ``add_arguments(parser)`` and ``run(args) -> dict``.
Adding one is a single line in ``SUBCOMMANDS``. ``--json`` prints ``json.dumps`` of the
result dict (one object); otherwise a readable two-column table (nested objects and lists
of objects flattened to ``a.b`` and ``a[0].b`` keys).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Mapping, Sequence

# subcommand -> module (imported only when chosen)
SUBCOMMANDS: dict[str, str] = {
    "workqueue": "bench.workqueue",
    "informer": "bench.informer",
    "cronjob-skew": "bench.cronjob_skew",
    "soak": "bench.soak",
    "memprofile": "bench.memprofile",
    "restclient": "bench.restclient",
    "watch-chunks": "bench.watch_chunks",
    "metadata": "bench.metadata",
    "webhook-abuse": "bench.webhook_abuse",
    "typed-read": "bench.typed_read",
    "startup": "bench.startup",
    "models": "bench.models",
    "tick-costs": "bench.tick_costs",
    "object-model": "bench.object_model",
}


def _table(result: Mapping[str, object], prefix: str = "") -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for key, value in result.items():
        if isinstance(value, Mapping):
            rows.extend(_table(value, f"{prefix}{key}."))
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            for i, item in enumerate(value):  # e.g. cronjob-skew's per-replica rows
                rows.extend(_table(item, f"{prefix}{key}[{i}]."))
        elif isinstance(value, float):
            rows.append((prefix + key, f"{value:,.3f}" if value < 100 else f"{value:,.0f}"))
        else:
            rows.append((prefix + key, str(value)))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module_name in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=(module.__doc__ or "").strip().splitlines()[0])
        p.add_argument("--json", action="store_true", help="print one JSON object")
        module.add_arguments(p)
        p.set_defaults(_module=module)
    args = parser.parse_args(argv)
    result: dict[str, object] = args._module.run(args)
    if args.json:
        print(json.dumps(result))
    else:
        rows = _table(result)
        width = max(len(k) for k, _ in rows)
        for key, value in rows:
            print(f"{key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
