"""RESTClient CPU per request: the lean transport against the urllib3 pool, same run.

Scenario (the CronJob controller's writes at a tick): against a real kube-apiserver (a fresh
:class:`pyctrl.testing.envtest.ControlPlane`, or ``--kubeconfig``), ``--threads`` threads
sharing one :class:`pyctrl.kube.RESTClient` (``qps=0``: no client-side limiter) send
``--requests`` requests of one kind:

* ``job-create``: POST a batch/v1 Job with ``suspend: true`` (nothing runs);
* ``patch``: a merge PATCH of a label on one of 200 ConfigMaps (round robin);
* ``event-create``: POST a core/v1 Event.

Each (kind, transport) runs ``--rounds`` times, the two transports alternating (their order
flips every round, so drift on this shared machine hits both alike), each on its own warmed
client, from the same long-lived threads (as a controller's workers). Reported per kind and
transport: ``cpu_ms_per_1000`` (this Python process's user+sys CPU, all threads, per 1000
requests: best, worst, spread = worst - best) and ``req_per_s`` (wall throughput, best), and
per kind ``cpu_ratio`` = lean best / urllib3 best. The API server and etcd are other
processes and are not counted. ``lean_connections_opened`` counts the lean transport's
connections over the whole run (``--threads`` when none was lost).

Run: ``flock /tmp/heavy.lock .venv/bin/python -m bench.restclient [--json]`` (it starts a
control plane). Module interface as the ``python -m bench`` subcommands
(``add_arguments``/``run``).
"""

from __future__ import annotations

import argparse
import gc
import json
import queue
import resource
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from pyctrl.kube.client import RESTClient
from pyctrl.kube.resource import CONFIGMAPS, EVENTS, JOBS, NAMESPACES

KINDS = ("job-create", "patch", "event-create")
TRANSPORTS = ("urllib3", "lean")
PATCH_TARGETS = 200


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=int, default=2000, help="requests per run")
    parser.add_argument("--threads", type=int, default=16, help="threads sharing the client")
    parser.add_argument("--rounds", type=int, default=3, help="runs per kind and transport")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated kinds")
    parser.add_argument("--transports", default=",".join(TRANSPORTS),
                        help="comma-separated transports")
    parser.add_argument("--kubeconfig", default=None, help="use this cluster, not envtest")


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _job(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"bench": "restclient"}},
        "spec": {
            "suspend": True,
            "template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox:1.36", "command": ["true"]}]}},
        },
    }


def _event(name: str, namespace: str) -> dict[str, Any]:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "metadata": {"name": name},
        "involvedObject": {"kind": "CronJob", "apiVersion": "batch/v1", "name": "bench",
                           "namespace": namespace, "uid": "00000000-0000-0000-0000-000000000001"},
        "reason": "SuccessfulCreate", "message": f"Created job {name}", "type": "Normal",
        "source": {"component": "cronjob-controller"}, "count": 1,
        "firstTimestamp": now, "lastTimestamp": now,
    }


def _operation(client: RESTClient, kind: str, namespace: str,
               tag: str) -> Callable[[int], object]:
    if kind == "job-create":
        return lambda i: client.create(JOBS, _job(f"j-{tag}-{i}"), namespace)
    if kind == "patch":
        return lambda i: client.patch(CONFIGMAPS, f"cm-{i % PATCH_TARGETS}",
                                      {"metadata": {"labels": {"seq": f"{tag}-{i}"}}},
                                      namespace)
    if kind == "get":
        return lambda i: client.get(CONFIGMAPS, f"cm-{i % PATCH_TARGETS}", namespace)
    if kind == "event-create":
        return lambda i: client.create(EVENTS, _event(f"e-{tag}-{i}", namespace), namespace)
    raise ValueError(f"unknown kind {kind!r}")


class Workers:
    """``threads`` long-lived threads (like a controller's workers, so each keeps its
    connection between runs) that split each run's requests between them."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._tasks: list[queue.SimpleQueue[tuple[Callable[[int], object], int] | None]] = [
            queue.SimpleQueue() for _ in range(threads)]
        self._done: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
        self._pool = [threading.Thread(target=self._work, args=(k,), name=f"bench-{k}",
                                       daemon=True) for k in range(threads)]
        for t in self._pool:
            t.start()

    def _work(self, k: int) -> None:
        while (task := self._tasks[k].get()) is not None:
            op, requests = task
            try:
                for i in range(k, requests, self.threads):
                    op(i)
            except BaseException as exc:  # reported by run()
                self._done.put(exc)
                continue
            self._done.put(None)

    def run(self, requests: int, op: Callable[[int], object]) -> tuple[float, float]:
        """``requests`` calls of ``op`` spread over the threads: (CPU seconds, wall seconds)."""
        gc.collect()
        cpu0, wall0 = _cpu(), time.perf_counter()
        for q in self._tasks:
            q.put((op, requests))
        errors = [e for e in (self._done.get() for _ in range(self.threads)) if e is not None]
        cpu, wall = _cpu() - cpu0, time.perf_counter() - wall0
        if errors:
            raise RuntimeError(f"{len(errors)} worker(s) failed, first: {errors[0]!r}")
        return cpu, wall

    def stop(self) -> None:
        for q in self._tasks:
            q.put(None)
        for t in self._pool:
            t.join(10.0)


def measure(kubeconfig: str, args: argparse.Namespace) -> dict[str, Any]:
    kinds = [k for k in args.kinds.split(",") if k]
    transports = [t for t in args.transports.split(",") if t]
    clients = {t: RESTClient.from_kubeconfig(kubeconfig, qps=0, transport=t)
               for t in transports}
    admin = clients[transports[0]]
    workers = Workers(args.threads)
    namespace = f"bench-rc-{uuid.uuid4().hex[:8]}"
    admin.create(NAMESPACES, {"metadata": {"name": namespace}})
    try:
        for i in range(PATCH_TARGETS):
            admin.create(CONFIGMAPS, {"metadata": {"name": f"cm-{i}"}, "data": {"k": "v"}},
                         namespace)
        for client in clients.values():  # warm: every thread opens its connection
            workers.run(args.threads * 4, _operation(client, "get", namespace, "warm"))
        samples: dict[str, dict[str, list[tuple[float, float]]]] = {
            k: {t: [] for t in transports} for k in kinds}
        for rnd in range(args.rounds):
            for kind in kinds:
                order = transports if rnd % 2 == 0 else list(reversed(transports))
                for t in order:
                    op = _operation(clients[t], kind, namespace, f"{t}-{rnd}")
                    cpu, wall = workers.run(args.requests, op)
                    samples[kind][t].append((cpu, wall))
                    print(f"round {rnd} {kind:13s} {t:8s} cpu {cpu:6.2f}s "
                          f"({cpu / args.requests * 1e6:5.0f} us/req) wall {wall:6.2f}s",
                          file=sys.stderr, flush=True)
        lean = clients["lean"]._lean if "lean" in clients else None
        connections = lean.connections_opened if lean is not None else None
    finally:
        workers.stop()
        admin.delete(NAMESPACES, namespace)
        for client in clients.values():
            client.close()
    result: dict[str, Any] = {"requests": args.requests, "threads": args.threads,
                              "rounds": args.rounds,
                              "lean_connections_opened": connections}
    per_1000 = 1000.0 / args.requests
    for kind in kinds:
        row: dict[str, Any] = {}
        for t in transports:
            cpus = [c * per_1000 * 1000.0 for c, _ in samples[kind][t]]  # ms per 1000
            rates = [args.requests / w for _, w in samples[kind][t]]
            row[t] = {"cpu_ms_per_1000": min(cpus), "cpu_ms_per_1000_worst": max(cpus),
                      "spread": max(cpus) - min(cpus), "req_per_s": max(rates),
                      "all_cpu_ms_per_1000": [round(c, 1) for c in cpus]}
        if "lean" in row and "urllib3" in row:
            row["cpu_ratio"] = row["lean"]["cpu_ms_per_1000"] / row["urllib3"]["cpu_ms_per_1000"]
        result[kind] = row
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.kubeconfig:
        return measure(args.kubeconfig, args)
    from pyctrl.testing.envtest import ControlPlane

    with ControlPlane() as cp:
        return measure(cp.kubeconfig_path, args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.restclient", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_arguments(parser)
    args = parser.parse_args(argv)
    result = run(args)
    if args.json:
        print(json.dumps(result))
    else:
        for kind in (k for k in result if isinstance(result[k], dict)):
            for t, row in result[kind].items():
                if isinstance(row, dict):
                    print(f"{kind:13s} {t:8s} cpu ms/1000 req best {row['cpu_ms_per_1000']:7.0f}"
                          f"  spread {row['spread']:5.0f}  all {row['all_cpu_ms_per_1000']}"
                          f"  best {row['req_per_s']:6.0f} req/s")
            if "cpu_ratio" in result[kind]:
                print(f"{kind:13s} cpu ratio lean/urllib3 {result[kind]['cpu_ratio']:.3f}")
        print(f"lean connections opened: {result['lean_connections_opened']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
