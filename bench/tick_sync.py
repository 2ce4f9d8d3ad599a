"""The ``sync`` group of ``python -m bench tick-costs`` (:mod:`bench.tick_costs`): whole syncs.

Contract: :func:`group_sync` runs ``rounds`` in-process ticks of ``cronjobs_n`` CronJobs due
at 08:00 (typed, as cached; with ``distinct`` each has its own spelling of ``* * * * *``, so
no two share a parsed schedule). A tick syncs every CronJob once (it creates its Job through
a canned client that answers as the API server does, decoded as the RESTClient decodes),
adds the created Jobs to the Job cache as the informer would, and syncs every CronJob again
(the deferred status write). Each round is a tick of its own: what the schedules remember
of an earlier round is forgotten first. It reports CPU µs (``time.process_time``) per create
sync and per status sync, median [min-max] over the rounds, the writes of one round, and
with ``profile_path`` a cProfile table of one more round.
"""

from __future__ import annotations

import copy
import statistics
import time
from datetime import UTC, datetime
from typing import Any

import orjson

from bench.tick_costs import job_answer, sample_cronjob

__all__ = ["group_sync"]


class _CannedClient:
    """The API server's answers, canned: a create answers its CronJob's Job, a patch the
    patched CronJob; decoded by ``decode_object`` as the RESTClient does."""

    def __init__(self, jobs: dict[str, bytes], cronjob: bytes) -> None:
        self.jobs = jobs
        self.cronjob = cronjob
        self.writes = 0

    def create(self, resource: Any, obj: Any, namespace: str | None = None, *,
               dry_run: bool = False) -> Any:
        from pyctrl.kube.body import decode_object

        self.writes += 1
        return decode_object(self.jobs[obj["metadata"]["ownerReferences"][0]["uid"]])

    def patch(self, resource: Any, name: str, patch: Any, namespace: str | None = None,
              **kwargs: Any) -> Any:
        from pyctrl.kube import body

        self.writes += 1
        if kwargs.get("answer") == "metadata":  # as the RESTClient answers it
            return body.decode_head(self.cronjob)
        return body.decode_object(self.cronjob)

    def get(self, resource: Any, name: str, namespace: str | None = None) -> Any:
        from pyctrl.errors import NotFound

        raise NotFound(f"{name} not found")


def _every_minute(i: int) -> str:
    """The ``i``-th of 1357 distinct spellings of ``* * * * *``."""
    a, b = i % 59, (i // 59) % 23
    return f"0-{a},{a + 1}-59 0-{b},{b + 1}-23 * * *"


def _sync_world(n: int, distinct: bool = False) -> tuple[list[Any], dict[str, bytes], bytes]:
    """``n`` CronJobs due at 08:00 (typed, as cached) and each one's Job as created; with
    ``distinct`` each has a schedule string of its own."""
    from cronjob_controller.crd import CronJob
    from pyctrl import api

    _, raw = sample_cronjob()
    cronjobs, answers = [], {}
    base = job_answer()
    for i in range(n):
        obj = copy.deepcopy(raw)
        uid = f"b1e2c3d4-5f60-4a7b-8c9d-{i:012d}"
        obj["metadata"].update(name=f"backup-{i:05d}", uid=uid)
        if distinct:
            obj["spec"]["schedule"] = _every_minute(i)
        cronjobs.append(api.decode(CronJob, obj))
        job = copy.deepcopy(base)
        job["metadata"].update(name=f"backup-{i:05d}-29400480", uid=f"j-{uid}")
        job["metadata"]["ownerReferences"] = [{
            "apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob", "name": f"backup-{i:05d}",
            "uid": uid, "controller": True, "blockOwnerDeletion": True}]
        answers[uid] = orjson.dumps(job)
    return cronjobs, answers, orjson.dumps(raw)


def _new_tick(cronjobs: list[Any]) -> None:
    """Forget what the schedules remember of an earlier round (CronSchedule's next_after
    memo): every round is a tick of its own, as the next minute's is, not a replay."""
    from cronjob_controller import api, schedule

    for cj in cronjobs:
        parsed = schedule.parse(cj.spec.schedule, api.load_zone(cj.spec.time_zone))
        if hasattr(parsed, "_memo"):  # absent before issue 42's memo
            parsed._memo = ()


def _sync_round(cronjobs: list[Any], answers: dict[str, bytes], patched: bytes,
                profile: Any = None) -> tuple[float, float, int]:
    """One tick in-process: every CronJob synced (a create), its Job added to the cache,
    synced again (the deferred status write). CPU µs per create sync and per status sync."""
    from cronjob_controller.controller import CronJobReconciler
    from cronjob_controller.crd import CRONJOBS, CronJob
    from cronjob_controller.templatecheck import Verdict
    from pyctrl import Request
    from pyctrl.api.typed import decode
    from pyctrl.cache import (
        CONTROLLER_UID_INDEX,
        Indexer,
        IndexerLister,
        controller_uid_index_func,
    )
    from pyctrl.kube import JOBS
    from pyctrl.models.batch_v1 import Job
    from pyctrl.testing import FakeClock, FakeRecorder

    clock = FakeClock(datetime(2026, 11, 26, 8, 0, 0, 200000, tzinfo=UTC))
    cj_index = Indexer()
    for cj in cronjobs:
        cj_index.add(cj)
    job_index = Indexer(indexers={CONTROLLER_UID_INDEX: controller_uid_index_func})
    client = _CannedClient(answers, patched)
    rec = CronJobReconciler(client, IndexerLister[CronJob](cj_index, CRONJOBS),  # type: ignore[arg-type]
                            IndexerLister[Job](job_index, JOBS), FakeRecorder(), clock=clock)
    requests = [Request(cj.metadata.namespace, cj.metadata.name) for cj in cronjobs]
    for cj, req in zip(cronjobs, requests, strict=True):  # the dry runs of settled CronJobs
        rec.templates.verdicts.put(str(req), cj.metadata.uid, cj.metadata.generation,
                                   Verdict(True))
    _new_tick(cronjobs)
    creates = _syncs(rec, requests, profile)
    for cj in cronjobs:  # the informer delivers the created Jobs
        job = decode(Job, orjson.loads(answers[cj.metadata.uid]))
        job_index.add(job)  # type: ignore[arg-type]
    statuses = _syncs(rec, requests, profile)
    n = len(requests)
    return creates / n * 1e6, statuses / n * 1e6, client.writes


def _syncs(rec: Any, requests: list[Any], profile: Any) -> float:
    """CPU seconds to reconcile every request once (profiled when ``profile`` is given)."""
    if profile is not None:
        profile.enable()
    start = time.process_time()
    for req in requests:
        rec.reconcile(req)
    spent = time.process_time() - start
    if profile is not None:
        profile.disable()
    return spent


def group_sync(rounds: int, cronjobs_n: int, profile_path: str | None,
               distinct: bool = False) -> dict[str, Any]:
    cronjobs, answers, patched = _sync_world(cronjobs_n, distinct)
    _sync_round(cronjobs[:50], answers, patched)
    creates, statuses = [], []
    writes = 0
    for _ in range(rounds):
        c, s, writes = _sync_round(cronjobs, answers, patched)
        creates.append(c)
        statuses.append(s)
    out: dict[str, Any] = {"writes_per_round": writes}
    for name, us in (("create_sync", creates), ("status_sync", statuses)):
        out[name] = {"median_us": round(statistics.median(us), 2),
                     "min_us": round(min(us), 2), "max_us": round(max(us), 2)}
    if profile_path:
        import cProfile
        import pstats

        prof = cProfile.Profile(time.process_time)
        _sync_round(cronjobs, answers, patched, prof)
        with open(profile_path, "w") as f:
            pstats.Stats(prof, stream=f).sort_stats("tottime").print_stats(40)
            pstats.Stats(prof, stream=f).sort_stats("cumulative").print_stats(60)
        out["profile"] = profile_path
    return out
