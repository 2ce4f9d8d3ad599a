"""Memprofile: where the CronJob controller's memory goes over many simulated minute ticks.

In-process and cheap (no API server, no real time): :class:`Simulation` runs the production
wiring (:func:`cronjob_controller.wiring.build` on a :class:`pyctrl.Manager`) over a
:class:`pyctrl.testing.FakeClient` and a :class:`pyctrl.testing.FakeClock`, with ``--cronjobs``
CronJobs ``* * * * *`` (history limits 1/1, Job template suspended), as ``bench soak`` does.
Each :meth:`Simulation.tick` is one minute: the clock moves to one second past the minute, the
controller creates one Job per CronJob, the Jobs are marked Complete through the status
subresource (as the soak's completer does), and the tick waits until history cleanup left one
Job per CronJob, every status records the minute and the queue and event sink are idle; then
the clock moves past the events' maximum deferral, and the Events the fake stored are deleted
(the API server expires them; the fake never does) and its action log cleared, so the fake's
own memory stays flat.

Measured, per tick: RSS, the event correlator's deep size and the number of gc-tracked
objects; after ``--warmup`` ticks and at the end: object counts by type and the sizes of the
controller's known containers (:func:`containers`: queue sets and heaps, rate limiter history,
informer stores and indexes, event buffer and correlator caches, the reconciler's report and
run records, the clock's waiters, threads). With ``--trace``, ``tracemalloc`` starts at the end
of warm-up (it slows the run about 40x) and the ``--top`` tracebacks holding the most memory
allocated since then are reported (allocations inside ``pyctrl/testing`` left out): that is
the growth. Slopes are per 10 ticks after warm-up. Flat figures here with a growing RSS in
``bench soak`` point at the allocator or at parts the fake does not exercise (HTTP, JSON).
"""

from __future__ import annotations

import argparse
import gc
import sys
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry

from bench.cronjob_skew import job_template
from cronjob_controller.api import CRONJOBS
from cronjob_controller.wiring import CronJobController, build
from pyctrl import Manager, ManagerOptions
from pyctrl.kube import EVENTS, JOBS, RawObject
from pyctrl.log import configure_logging
from pyctrl.testing import FakeClient, FakeClock

__all__ = ["Simulation", "add_arguments", "containers", "deep_size", "run"]

NAMESPACE = "soak"
START = datetime(2026, 3, 10, 10, 0, 30, tzinfo=UTC)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cronjobs", type=int, default=300, help="CronJobs (* * * * *)")
    parser.add_argument("--ticks", type=int, default=60, help="simulated minutes")
    parser.add_argument("--warmup", type=int, default=15,
                        help="ticks before the first snapshot")
    parser.add_argument("--workers", type=int, default=4, help="controller workers")
    parser.add_argument("--top", type=int, default=20, help="growing sites reported")
    parser.add_argument("--trace", action="store_true",
                        help="tracemalloc from the end of warm-up (slows the run ~40x)")
    parser.add_argument("--frames", type=int, default=6, help="traceback depth traced")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="real seconds one tick may take to settle")


def _len(obj: object, *attrs: str) -> int | None:
    for attr in attrs:
        obj = getattr(obj, attr, None)
        if obj is None:
            return None
    try:
        return len(obj)  # type: ignore[arg-type]
    except TypeError:
        return None


def containers(wired: CronJobController, manager: Manager, clock: FakeClock) -> dict[str, int]:
    """Sizes of the containers that could grow with time or with the number of Jobs."""
    sizes: dict[str, int | None] = {}
    queue = wired.controller.queue
    for attr in ("_dirty", "_processing", "_heap", "_waiting", "_pheap", "_queued", "_requeue",
                 "_delayed_priority", "_add_times", "_start_times", "_parked"):
        sizes[f"queue.{attr}"] = _len(queue, attr)
    for i, limiter in enumerate(getattr(queue.rate_limiter, "limiters", ())):
        sizes[f"rate_limiter.{i}.failures"] = _len(limiter, "_failures")
    for kind, informers in (("cronjob", wired.cronjob_informers),
                            ("job", wired.job_informers)):
        for i, informer in enumerate(informers):
            store = informer.get_indexer()
            sizes[f"{kind}_informer.{i}.items"] = len(store)
            for name, index in getattr(store, "_indices", {}).items():
                sizes[f"{kind}_informer.{i}.index.{name}.values"] = len(index)
                sizes[f"{kind}_informer.{i}.index.{name}.keys"] = sum(
                    len(v) for v in index.values())
            for attr, value in vars(informer).items():
                if isinstance(value, dict | set | list):
                    sizes[f"{kind}_informer.{i}.{attr}"] = len(value)
    reconciler = wired.reconciler
    sizes["reconciler.reporter"] = len(reconciler.reporter)
    sizes["reconciler.rejected"] = len(reconciler.rejected)
    sizes["reconciler.gone"] = len(reconciler.gone)
    sizes["reconciler.runs"] = len(reconciler.runs)
    sizes["reconciler.runs._uids_of"] = _len(reconciler.runs, "_uids_of")
    broadcaster = manager.event_broadcaster()
    sizes["events.buffer"] = _len(broadcaster, "_buffer")
    correlator = getattr(broadcaster, "_correlator", None)
    for attr in ("_similar", "_logged", "_buckets"):
        sizes[f"events.correlator.{attr}"] = _len(correlator, attr)
    similar = getattr(correlator, "_similar", {})
    sizes["events.correlator._similar.messages"] = sum(
        len(r.messages) for r in similar.values())
    sizes["clock.waiters"] = clock.waiters()
    sizes["threads"] = threading.active_count()
    return {k: v for k, v in sizes.items() if v is not None}


def deep_size(obj: object, seen: set[int] | None = None) -> int:
    """Bytes held by ``obj`` and everything it references that was not counted yet."""
    seen = set() if seen is None else seen
    total, stack = 0, [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, type | threading.Thread):
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, list | tuple | set | frozenset):
            stack.extend(o)
        elif hasattr(o, "__dict__"):
            stack.append(vars(o))
        elif hasattr(o, "__slots__"):
            stack.extend(getattr(o, a) for a in o.__slots__ if hasattr(o, a))
    return total


def _type_counts() -> Counter[str]:
    gc.collect()
    return Counter(type(o).__qualname__ for o in gc.get_objects())


def _cronjob(name: str) -> RawObject:
    return {"metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"schedule": "* * * * *", "successfulJobsHistoryLimit": 1,
                     "failedJobsHistoryLimit": 1, "jobTemplate": job_template()}}


def _complete(client: FakeClient, name: str, now: str) -> None:
    status = {"startTime": now, "completionTime": now, "succeeded": 1, "conditions": [
        {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now},
        {"type": "Complete", "status": "True", "lastTransitionTime": now}]}
    client.patch(JOBS, name, {"status": status}, NAMESPACE, subresource="status")


def _wait(what: str, done: Callable[[], bool], timeout: float) -> None:
    """Poll ``done`` in real time (the workers run in real time; only the clock is fake)."""
    deadline = time.monotonic() + timeout
    cond = threading.Condition()
    with cond:
        while not done():
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}")
            cond.wait(0.005)


class Simulation:
    """The production wiring over a FakeClient and a FakeClock, driven one minute at a time.

    ``start()`` runs the Manager in a thread and waits for the caches; each ``tick()`` is one
    simulated minute of the soak (see module docstring); ``close()`` stops and joins it all.
    """

    def __init__(self, cronjobs: int, *, workers: int = 4, timeout: float = 120.0) -> None:
        self.n = cronjobs
        self.timeout = timeout
        self.clock = FakeClock(START)
        # A short watch history (the fake's memory, not the controller's): a re-watch after
        # a timeout needs only the writes since the informer's last resourceVersion.
        self.client = FakeClient(self.clock, history_size=max(100, 2 * cronjobs))
        for i in range(cronjobs):
            self.client.add_object(CRONJOBS, _cronjob(f"soak-{i:05d}"))
        self.manager = Manager(self.client, ManagerOptions(graceful_shutdown_timeout=10),
                               clock=self.clock, registry=CollectorRegistry())
        self.wired = build(self.manager, namespaces=[NAMESPACE], workers=workers)
        self.minute = START.replace(second=0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.manager.run, args=(self._stop,),
                                        name="memprofile-manager")

    def start(self) -> None:
        self._thread.start()
        informers = [*self.wired.cronjob_informers, *self.wired.job_informers]
        _wait("informers synced", lambda: all(i.has_synced() for i in informers),
              self.timeout)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(60)

    def containers(self) -> dict[str, int]:
        return containers(self.wired, self.manager, self.clock)

    def _idle(self) -> bool:
        queue: Any = self.wired.controller.queue
        return (len(queue) == 0 and not queue._processing
                and self.manager.event_broadcaster().wait_idle(0.0))

    def tick(self) -> None:
        """One simulated minute: Jobs created, completed, cleaned up; statuses and events
        written; the fake's stored Events and action log dropped."""
        self.minute += timedelta(minutes=1)
        minute, client, n = self.minute, self.client, self.n
        self.clock.set_time(minute + timedelta(seconds=1))
        stamp = minute.strftime("%Y-%m-%dT%H:%M:%SZ")
        suffix = f"-{int(minute.timestamp()) // 60}"

        def created() -> list[RawObject]:
            return [j for j in client.list_objects(JOBS, NAMESPACE)
                    if j["metadata"]["name"].endswith(suffix)]

        _wait(f"{n} Jobs at {stamp}", lambda: len(created()) >= n, self.timeout)
        self.clock.set_time(minute + timedelta(seconds=3))
        done_at = (minute + timedelta(seconds=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
        for job in created():
            _complete(client, job["metadata"]["name"], done_at)

        def settled() -> bool:
            if len(client.list_objects(JOBS, NAMESPACE)) != n:
                return False
            if not all((cj.get("status") or {}).get("lastScheduleTime") == stamp
                       for cj in client.list_objects(CRONJOBS, NAMESPACE)):
                return False
            return self._idle()

        _wait(f"history cleanup and status at {stamp}", settled, self.timeout)
        self.clock.set_time(minute + timedelta(seconds=59))  # past the events' max_defer
        _wait("events written", self._idle, self.timeout)
        for event in client.list_objects(EVENTS, NAMESPACE):
            client.delete(EVENTS, event["metadata"]["name"], NAMESPACE)
        client.clear_actions()


def _growth(snapshot: tracemalloc.Snapshot, top: int) -> list[dict[str, object]]:
    """The ``top`` tracebacks holding the most memory allocated since tracing began."""
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__),
              tracemalloc.Filter(False, "*/pyctrl/testing/*", all_frames=True),
              tracemalloc.Filter(False, __file__, all_frames=True)]
    stats = snapshot.filter_traces(ignore).statistics("traceback")
    return [{"kib": round(stat.size / 1024, 1), "count": stat.count,
             "traceback": ["/".join(f.filename.rsplit("/", 2)[-2:]) + f":{f.lineno}"
                           for f in reversed(stat.traceback)]}
            for stat in stats[:top]]


def _rss_mib() -> float:
    with open("/proc/self/status", "rb") as f:
        for line in f.read().decode().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 2)
    return 0.0


def run(args: argparse.Namespace) -> dict[str, object]:
    if args.ticks <= args.warmup or args.warmup < 1 or args.cronjobs < 1:
        raise SystemExit("need 1 <= --warmup < --ticks and --cronjobs >= 1")
    configure_logging("json", "warning")  # as the soak runs it; debug lines cost time
    sim = Simulation(args.cronjobs, workers=args.workers, timeout=args.timeout)
    series: list[dict[str, float]] = []
    first: tuple[Counter[str], dict[str, int]] | None = None
    last: tuple[Counter[str], dict[str, int]] | None = None
    snapshot: tracemalloc.Snapshot | None = None
    started = time.monotonic()
    try:
        sim.start()
        for tick in range(1, args.ticks + 1):
            sim.tick()
            gc.collect()
            traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
            correlator = getattr(sim.manager.event_broadcaster(), "_correlator", None)
            series.append({"tick": tick, "rss_mib": _rss_mib(),
                           "correlator_mib": round(deep_size(correlator) / 2**20, 3),
                           "objects": len(gc.get_objects()),
                           "traced_mib": round(traced / 2**20, 3)})
            if tick == args.warmup:
                first = (_type_counts(), sim.containers())
                if args.trace:
                    # Traced from here on: what is still alive at the end was allocated
                    # after warm-up, which is exactly the growth.
                    tracemalloc.start(args.frames)
        last = (_type_counts(), sim.containers())
        if args.trace:
            snapshot = tracemalloc.take_snapshot()
    finally:
        sim.close()
        tracemalloc.stop()
    assert first is not None and last is not None
    steady = series[args.warmup - 1:]
    span = len(steady) - 1

    def slope(field: str) -> float:
        return round((steady[-1][field] - steady[0][field]) * 10 / span, 3)

    types = {k: last[0][k] - first[0].get(k, 0) for k in last[0]}
    return {
        "cronjobs": args.cronjobs, "ticks": args.ticks, "warmup": args.warmup,
        "rss_mib_after_warmup": steady[0]["rss_mib"], "rss_mib_end": steady[-1]["rss_mib"],
        "rss_slope_mib_per_10_ticks": slope("rss_mib"),
        "objects_slope_per_10_ticks": slope("objects"),
        "correlator_mib_after_warmup": steady[0]["correlator_mib"],
        "correlator_mib_end": steady[-1]["correlator_mib"],
        "traced_mib_end": steady[-1]["traced_mib"],
        "containers_grew": {k: [first[1].get(k), v] for k, v in last[1].items()
                            if v != first[1].get(k)},
        "containers_end": last[1],
        "object_types_grew": dict(sorted(((k, v) for k, v in types.items() if v > 0),
                                         key=lambda kv: -kv[1])[:args.top]),
        "top_growth": ({} if snapshot is None else
                       {str(i): s for i, s in enumerate(_growth(snapshot, args.top))}),
        "series": {str(int(s["tick"])): [s["rss_mib"], s["correlator_mib"], s["objects"],
                                         s["traced_mib"]] for s in series},
        "real_seconds": round(time.monotonic() - started, 1),
    }
