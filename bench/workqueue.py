"""Work queue throughput: pyctrl's RateLimitingQueue against client-go's, same scenarios.

Scenarios (identical in bench/anchors/workqueue/main.go, client-go v0.35.4):

* ``single_thread_ops_per_s``: one thread loops ``add(k); get(); done(k)`` with
  ``k = i % distinct``; one op is one such triple.
* ``producer_consumers_items_per_s``: one producer adds ``items`` keys ``i % distinct``, then
  shuts the queue down with drain; ``consumers`` threads ``get``/``done`` until ShutDown.
  Throughput is items processed / wall time from the first add to the last consumer exiting
  (duplicates still waiting collapse, so both sides process fewer than ``items``; the count and
  the producer's adds per second over the same wall time are reported per run).

``--item`` picks what the Python side queues: ``int`` (the default; the Go anchor's type),
``str`` (``"ns/obj-<k>"`` keys, as controllers queued before the reconcile round) or
``request`` (:class:`pyctrl.reconcile.Request` values, what controllers queue now); str and
request items are built once up front, so those two compare like for like.

Each side runs ``repeat`` times, interleaved (Go, then Python, then Go...), and the best run of
each counts, which damps noise from other load on a shared machine. Both queues are built
without metrics. ``ratio`` is pyctrl / client-go. The Go binary is built into bench/anchors/bin
with ``go build`` and reused until its sources change.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Hashable, Sequence
from pathlib import Path

from bench.gobuild import anchor_binary, build_anchor
from pyctrl.reconcile import Request
from pyctrl.workqueue import RateLimitingQueue, ShutDown

GO_BINARY = anchor_binary("workqueue")
GOALS = {"single_thread_ops_per_s": 0.20, "producer_consumers_items_per_s": 0.15}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ops", type=int, default=1_000_000, help="single-thread triples")
    parser.add_argument("--items", type=int, default=1_000_000, help="producer adds")
    parser.add_argument("--distinct", type=int, default=10_000, help="distinct keys")
    parser.add_argument("--consumers", type=int, default=4, help="consumer threads")
    parser.add_argument("--repeat", type=int, default=3, help="runs per side; best counts")
    parser.add_argument("--no-go", action="store_true", help="skip the client-go anchor")
    parser.add_argument("--item", choices=("int", "str", "request"), default="int",
                        help="what the Python side queues (see module docstring)")


def make_items(kind: str, distinct: int) -> Sequence[Hashable] | None:
    """The distinct items for ``kind`` (None for int: the loops use ``i % distinct``)."""
    if kind == "str":
        return [f"ns/obj-{k}" for k in range(distinct)]
    if kind == "request":
        return [Request("ns", f"obj-{k}") for k in range(distinct)]
    return None


# -- pyctrl side -----------------------------------------------------------------------------
def single_thread(ops: int, distinct: int, items: Sequence[Hashable] | None = None) -> float:
    q: RateLimitingQueue[Hashable] = RateLimitingQueue(name="bench")
    add, get, done = q.add, q.get, q.done
    try:
        start = time.perf_counter()
        if items is None:
            for i in range(ops):
                k = i % distinct
                add(k)
                get()
                done(k)
        else:
            for i in range(ops):
                item = items[i % distinct]
                add(item)
                get()
                done(item)
        return ops / (time.perf_counter() - start)
    finally:
        q.shut_down()


def producer_consumers(items: int, distinct: int, consumers: int,
                       values: Sequence[Hashable] | None = None) -> tuple[float, int]:
    q: RateLimitingQueue[Hashable] = RateLimitingQueue(name="bench")
    counts: list[int] = []
    lock = threading.Lock()

    def consume() -> None:
        get, done = q.get, q.done
        n = 0
        while True:
            try:
                item = get()
            except ShutDown:
                break
            n += 1
            done(item)
        with lock:
            counts.append(n)

    threads = [
        threading.Thread(target=consume, name=f"bench-consumer-{c}") for c in range(consumers)
    ]
    start = time.perf_counter()
    for t in threads:
        t.start()
    add = q.add
    if values is None:
        for i in range(items):
            add(i % distinct)
    else:
        for i in range(items):
            add(values[i % distinct])
    q.shut_down(drain=True)
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    processed = sum(counts)
    return processed / elapsed, processed


# -- client-go side --------------------------------------------------------------------------
def build_go_binary() -> Path | None:
    """Build (or reuse) the anchor binary; None when Go is not available."""
    return build_anchor("workqueue")


def run_go(binary: Path, args: argparse.Namespace) -> dict[str, float]:
    out = subprocess.run(
        [
            str(binary), f"-ops={args.ops}", f"-items={args.items}",
            f"-distinct={args.distinct}", f"-consumers={args.consumers}",
        ],
        check=True, capture_output=True, text=True,
    ).stdout
    result: dict[str, float] = json.loads(out)
    return result


def machine_info() -> dict[str, object]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    go_version = None
    if shutil.which("go"):
        go_version = subprocess.run(
            ["go", "version"], capture_output=True, text=True, check=False
        ).stdout.strip()
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "loadavg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "switch_interval_s": sys.getswitchinterval(),
        "go": go_version,
        "client_go": "k8s.io/client-go v0.35.4",
    }


def run(args: argparse.Namespace) -> dict[str, object]:
    binary = None if args.no_go else build_go_binary()
    py_runs: list[dict[str, float]] = []
    go_runs: list[dict[str, float]] = []
    values = make_items(args.item, args.distinct)
    for _ in range(max(1, args.repeat)):
        if binary is not None:
            go_runs.append(run_go(binary, args))
        rate, processed = producer_consumers(args.items, args.distinct, args.consumers, values)
        py_runs.append(
            {
                "single_thread_ops_per_s": single_thread(args.ops, args.distinct, values),
                "producer_consumers_items_per_s": rate,
                "producer_consumers_processed": float(processed),
            }
        )
    keys = ("single_thread_ops_per_s", "producer_consumers_items_per_s")
    for r in (*py_runs, *go_runs):
        n_done = r["producer_consumers_processed"]
        r["producer_consumers_adds_per_s"] = (
            r["producer_consumers_items_per_s"] * args.items / n_done if n_done else 0.0
        )
    py_best = {k: max(r[k] for r in py_runs) for k in keys}
    result: dict[str, object] = {
        "benchmark": "workqueue",
        "params": {
            "ops": args.ops, "items": args.items, "distinct": args.distinct,
            "consumers": args.consumers, "repeat": args.repeat, "item": args.item,
        },
        "pyctrl": {**py_best, "runs": py_runs},
        "client_go": None,
        "ratio": None,
    }
    if go_runs:
        go_best = {k: max(r[k] for r in go_runs) for k in keys}
        result["client_go"] = {**go_best, "runs": go_runs}
        result["ratio"] = {k: py_best[k] / go_best[k] for k in keys}
        result["goal"] = GOALS
    result["machine"] = machine_info()
    return result
