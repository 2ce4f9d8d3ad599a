"""Where the typed tick's time goes: CPU per write and per watch event, in-process (issue 42).

Load-insensitive by construction: no API server and no network. Each step of the CronJob
controller's Job create, its status write and the informers' handling of a watch event runs
on canned, apiserver-shaped bodies (``bench/fixtures/job.json`` with a managedFields entry;
the ``informer`` bench's ConfigMap), timed with ``time.process_time`` (this process's CPU,
all threads) over ``--iterations`` calls. The steps of one group run interleaved, round after
round (``--rounds``, >= 5), and the median per round is reported in microseconds per call
(with min and max), so a busy neighbour slows every step of a round alike.

Groups:

* ``write``: per Job create. ``build_job`` (the dict from the template), ``log_line`` (the
  ``created job`` info line, JSON through the configured handler into a discarding stream),
  ``encode`` (the
  request body: orjson), ``answer_dict`` (the RESTClient's orjson decode of the 201 answer),
  ``answer_typed`` (``pyctrl.api.decode(Job, dict)``: what ``_create`` appends to the plan),
  and the alternatives: ``answer_bytes_typed`` (msgspec straight from the bytes),
  ``answer_meta`` (only the ObjectMeta), ``prepare`` (the decoder-lock check alone).
* ``status``: per status write: ``desired_diff`` (``desired_status`` + ``status_changes``),
  ``encode``, ``answer_dict`` (the patched CronJob's answer decoded whole, as before issue
  42) and ``answer_head`` (its metadata only: what the status write asks for now).
* ``event``: per watch event, decode only: ``typed`` (``TypedDecoder.event`` + ``fill_type``)
  and ``dict`` (orjson + ``drop_managed_fields``), for a Job and a ConfigMap line.
* ``informer``: per event through a whole SharedIndexInformer (reflector, DeltaFIFO, indexer,
  processor, one handler), watch lines fed from memory in 16 KiB chunks through
  ``WatchDecoder``, typed and dict, ConfigMaps as the ``informer`` bench: CPU per event
  from the watch call to the N-th update delivered.

The ``sync`` group lives in :mod:`bench.tick_sync`.

Run: ``python -m bench tick-costs [--groups write,status,event,informer] [--json]``.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO, cast

import orjson
import structlog

GROUPS = ("write", "status", "event", "sync", "informer")
FIXTURE = Path(__file__).parent / "fixtures" / "job.json"

_MANAGED = [{"manager": "cronjob-controller", "operation": "Update", "apiVersion": "batch/v1",
             "time": "2026-11-26T08:00:00Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:x": {}},
                                         "f:labels": {".": {}, "f:app": {}},
                                         "f:ownerReferences": {".": {}, "k:{\"uid\"}": {}}},
                          "f:spec": {"f:backoffLimit": {}, "f:template": {"f:spec": {
                              "f:containers": {"k:{\"name\":\"main\"}": {
                                  ".": {}, "f:image": {}, "f:name": {}}},
                              "f:restartPolicy": {}}}}}}]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--groups", default=",".join(GROUPS), help="comma-separated groups")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (>= 5)")
    parser.add_argument("--iterations", type=int, default=2000, help="calls per step per round")
    parser.add_argument("--events", type=int, default=5000, help="events per informer run")
    parser.add_argument("--cronjobs", type=int, default=1000, help="CronJobs per sync round")
    parser.add_argument("--distinct-schedules", action="store_true",
                        help="sync group: every CronJob its own (every-minute) schedule "
                             "string, so no two share a parsed schedule")
    parser.add_argument("--profile", default=None,
                        help="sync group: write a cProfile table (CPU time) here")


def job_answer() -> dict[str, Any]:
    """The API server's answer to a Job create: the fixture with a managedFields entry."""
    job: dict[str, Any] = json.loads(FIXTURE.read_text())
    job["metadata"]["managedFields"] = copy.deepcopy(_MANAGED)
    return job


def configmap_answer(i: int, rv: int) -> dict[str, Any]:
    """The ``informer`` bench's ConfigMap as the server sends it (managedFields included)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": f"bench-{i:05d}", "namespace": "bench", "uid": f"00000000-0000-0000-0000-{i:012d}",
        "resourceVersion": str(rv), "creationTimestamp": "2026-11-26T08:00:00Z",
        "labels": {"app": "bench", "tier": f"t{i % 7}", "shard": f"s{i % 13}"},
        "managedFields": [{"manager": "python", "operation": "Update", "apiVersion": "v1",
                           "time": "2026-11-26T08:00:00Z", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:data": {f"f:key-{k}": {} for k in range(10)}}}]},
        "data": {f"key-{k}": f"{i:05d}-{k}-" + "x" * 32 for k in range(10)}}


def _timed(fn: Callable[[], object], n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e6


def interleaved(steps: dict[str, Callable[[], object]], rounds: int,
                iterations: int) -> dict[str, dict[str, float]]:
    """µs per call of each step: median, min, max over ``rounds`` interleaved rounds."""
    for fn in steps.values():  # warm every step (decoders built, caches filled)
        _timed(fn, min(iterations, 50))
    samples: dict[str, list[float]] = {name: [] for name in steps}
    order = list(steps)
    for r in range(rounds):
        for name in order if r % 2 == 0 else reversed(order):
            samples[name].append(_timed(steps[name], iterations))
    return {name: {"median_us": round(statistics.median(s), 2), "min_us": round(min(s), 2),
                   "max_us": round(max(s), 2)} for name, s in samples.items()}


def sample_cronjob() -> Any:
    """A due CronJob (typed) and its raw form."""
    from cronjob_controller.crd import CronJob
    from pyctrl import api

    raw = {"apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob", "metadata": {
        "name": "backup", "namespace": "ops", "uid": "b1e2c3d4-5f60-4a7b-8c9d-0e1f2a3b4c5d",
        "resourceVersion": "184400", "generation": 1,
        "creationTimestamp": "2026-11-20T08:00:00Z"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {
            "metadata": {"labels": {"app": "backup"}},
            "spec": {"backoffLimit": 2, "template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "main", "image": "registry.example/backup:1.2.3",
                                "command": ["/bin/backup", "--once"]}]}}}}},
        "status": {"lastScheduleTime": "2026-11-26T07:59:00Z", "active": [],
                   "conditions": [{"type": "Ready", "status": "True", "reason": "Scheduled",
                                   "message": "", "lastTransitionTime": "2026-11-20T08:00:00Z",
                                   "observedGeneration": 1}]}}
    return api.decode(CronJob, raw), raw


def group_write(rounds: int, iterations: int) -> dict[str, Any]:
    from cronjob_controller import jobs
    from pyctrl import api
    from pyctrl.api.types import ObjectMeta
    from pyctrl.kube import format_time
    from pyctrl.kube.body import decode_object, prepare
    from pyctrl.models.batch_v1 import Job

    cronjob, _ = sample_cronjob()
    due = datetime(2026, 11, 26, 8, 0, tzinfo=UTC)
    body = jobs.build_job(cronjob, due, UTC)
    answer = orjson.dumps(job_answer())
    answer_dict = decode_object(answer)
    as_job = api.typed._json_decoder(Job)
    as_meta = api.typed._json_decoder(ObjectMeta)
    meta_dict = answer_dict["metadata"]
    log = structlog.get_logger("cronjob_controller.controller")
    scheduled = format_time(due)

    def log_line() -> None:
        log.info("created job", key="ops/backup", job=body["metadata"]["name"],
                 scheduled=scheduled)

    steps: dict[str, Callable[[], object]] = {
        "build_job": lambda: jobs.build_job(cronjob, due, UTC),
        "log_line": log_line,
        "encode": lambda: orjson.dumps(body),
        "answer_dict": lambda: decode_object(answer),
        "answer_typed": lambda: api.decode(Job, answer_dict),
        "answer_bytes_typed": lambda: as_job.decode(answer),
        "answer_meta": lambda: api.decode(ObjectMeta, meta_dict),
        "answer_meta_bytes": lambda: as_meta.decode(orjson.dumps(meta_dict)),
        "prepare": lambda: prepare(Job),
    }
    out: dict[str, Any] = interleaved(steps, rounds, iterations)
    out["bytes"] = {"request": len(orjson.dumps(body)), "answer": len(answer)}
    return out


def group_status(rounds: int, iterations: int) -> dict[str, Any]:
    from cronjob_controller.status import Plan, desired_status, status_changes
    from pyctrl.kube import body as bodies
    from pyctrl.kube.body import decode_object
    from pyctrl.models.batch_v1 import Job
    from pyctrl.testing import FakeClock

    cronjob, raw = sample_cronjob()
    clock = FakeClock(datetime(2026, 11, 26, 8, 0, 5, tzinfo=UTC))
    active = [__import__("pyctrl.api", fromlist=["decode"]).decode(Job, job_answer())]
    plan = Plan(active=active, last_schedule=datetime(2026, 11, 26, 8, 0, tzinfo=UTC),
                last_successful=None,
                next_schedule=datetime(2026, 11, 26, 8, 1, tzinfo=UTC))

    def diff() -> object:
        return status_changes(cronjob.status, desired_status(cronjob, plan, clock))

    changed = diff()
    body = {"status": changed, "metadata": {"resourceVersion": "184400"}}
    answered = copy.deepcopy(raw)
    answered["status"].update(orjson.loads(orjson.dumps(changed)))
    answered["metadata"]["managedFields"] = copy.deepcopy(_MANAGED) * 2
    answer = orjson.dumps(answered)
    steps: dict[str, Callable[[], object]] = {
        "desired_diff": diff,
        "encode": lambda: orjson.dumps(body),
        "answer_dict": lambda: decode_object(answer),
    }
    if hasattr(bodies, "decode_head"):  # absent before issue 42's change (a before run)
        steps["answer_head"] = lambda: bodies.decode_head(answer)
    out: dict[str, Any] = interleaved(steps, rounds, iterations)
    out["bytes"] = {"request": len(orjson.dumps(body)), "answer": len(answer)}
    return out


def _lines(kind: str, n: int) -> list[bytes]:
    if kind == "job":
        base = job_answer()
        out = []
        for i in range(n):
            obj = copy.deepcopy(base)
            obj["metadata"]["resourceVersion"] = str(200000 + i)
            out.append(orjson.dumps({"type": "MODIFIED", "object": obj}))
        return out
    return [orjson.dumps({"type": "MODIFIED", "object": configmap_answer(i, 200000 + i)})
            for i in range(n)]


def group_event(rounds: int, iterations: int) -> dict[str, Any]:
    from bench.informer import configmap_kind
    from pyctrl.cache.mutation import drop_managed_fields
    from pyctrl.cache.typed import TypedDecoder, fill_type
    from pyctrl.kube.resource import CONFIGMAPS, JOBS
    from pyctrl.kube.watch import _decode
    from pyctrl.models.batch_v1 import Job

    steps: dict[str, Callable[[], object]] = {}
    for kind, cls, resource in (("job", Job, JOBS), ("configmap", configmap_kind(), CONFIGMAPS)):
        line = _lines(kind, 1)[0]
        decoder = TypedDecoder(cls)
        fill = fill_type(resource)

        def typed(line: bytes = line, decoder: Any = decoder, fill: Any = fill) -> object:
            return fill(decoder.event(line)["object"])

        def raw(line: bytes = line) -> object:
            return drop_managed_fields(_decode(line)["object"])

        steps[f"{kind}_typed"] = typed
        steps[f"{kind}_dict"] = raw
    return interleaved(steps, rounds, iterations)


class _MemoryStream:
    """A watch stream over lines held in memory, split as a socket would deliver them."""

    def __init__(self, body: bytes, decode: Callable[[bytes], Any] | None,
                 started: list[float]) -> None:
        self._body = body
        self._decode = decode
        self._started = started
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[Any]:
        from pyctrl.kube.watch import WatchDecoder

        if not self._started:
            self._started.append(time.process_time())
        decoder = WatchDecoder(self._decode)
        body = self._body
        for at in range(0, len(body), 16384):
            yield from decoder.feed(body[at:at + 16384])
        yield from decoder.finish()
        self._closed.wait()

    def close(self) -> None:
        self._closed.set()


def _informer_run(typed: bool, lines: list[bytes], listed: list[dict[str, Any]]) -> float:
    from bench.informer import configmap_kind
    from pyctrl.cache.informer import SharedIndexInformer
    from pyctrl.cache.processor import ResourceEventHandlerFuncs
    from pyctrl.cache.typed import TypedDecoder, fill_type
    from pyctrl.kube.resource import CONFIGMAPS

    n = len(lines)
    body = b"\n".join(lines) + b"\n"
    started: list[float] = []
    decoder = TypedDecoder(configmap_kind()) if typed else None

    class LW:
        def list(self, *, limit: int | None, continue_: str | None,
                 resource_version: str | None) -> Any:
            page = {"metadata": {"resourceVersion": "100"}, "items": copy.deepcopy(listed)}
            return decoder.page_from_dict(page) if decoder is not None else page

        def watch(self, *, resource_version: str, timeout_seconds: int,
                  allow_watch_bookmarks: bool) -> Any:
            return _MemoryStream(body, decoder.event if decoder is not None else None, started)

    kwargs: dict[str, Any] = ({"transform": fill_type(CONFIGMAPS), "detect_mutations": False}
                              if typed else {})
    informer = SharedIndexInformer(LW(), name="tick-costs", **kwargs)
    done = threading.Event()
    seen = [0]

    def on_update(old: object, new: object) -> None:
        seen[0] += 1
        if seen[0] == n:
            done.set()

    informer.add_event_handler(ResourceEventHandlerFuncs(update_func=on_update))
    stop = threading.Event()
    t = threading.Thread(target=informer.run, args=(stop,))
    t.start()
    ok = done.wait(300)
    end = time.process_time()
    stop.set()
    t.join()
    if not ok:
        raise RuntimeError(f"informer delivered {seen[0]} of {n} updates")
    return (end - started[0]) / n * 1e6


def group_informer(rounds: int, events: int) -> dict[str, Any]:
    listed = [configmap_answer(i, 100) for i in range(events)]
    for obj in listed:
        del obj["metadata"]["managedFields"]
    lines = _lines("configmap", events)
    samples: dict[str, list[float]] = {"typed": [], "dict": []}
    _informer_run(True, lines[:200], listed[:200])
    _informer_run(False, lines[:200], listed[:200])
    for r in range(rounds):
        for typed in ((True, False) if r % 2 == 0 else (False, True)):
            samples["typed" if typed else "dict"].append(_informer_run(typed, lines, listed))
    return {name: {"median_us": round(statistics.median(s), 2), "min_us": round(min(s), 2),
                   "max_us": round(max(s), 2)} for name, s in samples.items()}


class _Discard(io.TextIOBase):
    """A text stream that drops what is written: no file to leave open."""

    def write(self, s: str) -> int:
        return len(s)


def run(args: argparse.Namespace) -> dict[str, Any]:
    import os

    from pyctrl.log import configure_logging

    # As the controller logs (JSON at info: one line per create), into /dev/null.
    configure_logging("json", "info", stream=cast(TextIO, _Discard()))
    groups = [g for g in args.groups.split(",") if g]
    out: dict[str, Any] = {"load_average": [round(x, 2) for x in os.getloadavg()]}
    for group in groups:
        if group == "write":
            out["write"] = group_write(args.rounds, args.iterations)
        elif group == "status":
            out["status"] = group_status(args.rounds, args.iterations)
        elif group == "event":
            out["event"] = group_event(args.rounds, args.iterations)
        elif group == "sync":
            from bench.tick_sync import group_sync

            out["sync"] = group_sync(args.rounds, args.cronjobs, args.profile,
                                     args.distinct_schedules)
        elif group == "informer":
            out["informer"] = group_informer(args.rounds, args.events)
        else:
            raise SystemExit(f"unknown group {group!r} (known: {', '.join(GROUPS)})")
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return out
