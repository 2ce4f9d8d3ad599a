"""Disruption: apiserver restarts and etcd compaction while the controller runs.

An in-process controller (:class:`tests.integration.cronjob.env.Env`, production wiring on a
FakeClock) runs ten ``* * * * *`` CronJobs through four minute ticks. Between ticks the
control plane is disturbed while the controller is connected:

1. ``restart``: kube-apiserver is stopped and started; every watch breaks and the reflectors
   back off (on the FakeClock, so they stay disconnected until the next tick's step).
2. ``compact``: Jobs are changed behind the informers' back (finished, a stray Job added),
   other writes push etcd past them, and etcd is compacted at its head.
3. ``restart+compact``: both, so every re-watch is from a compacted resourceVersion: with
   ``--watch-cache=false`` the apiserver answers 410 Gone and the informers must relist.
4. ``down-at-tick``: the apiserver is down when the tick arrives, so the due syncs fail and
   are retried with backoff until it is back.

The changes made while the informers are disconnected are only visible to them through a
relist or re-watch. After every tick: each CronJob has exactly one Job for it, and the
reconciler's Job and CronJob listers hold exactly what a fresh LIST returns (names and
resourceVersions). At the end no run is missing or duplicated over all ticks, and at least
one re-watch was answered 410 Gone (and relisted), while a refused connection alone never
made a reflector relist (it re-watches from its last resourceVersion).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cronjob_controller.api import CRONJOBS
from cronjob_controller.jobs import job_name
from cronjob_controller.wiring import CronJobController
from pyctrl.kube import CONFIGMAPS, JOBS, RESTClient, meta
from pyctrl.testing import FakeClock
from pyctrl.testing.envtest import ControlPlane
from tests.integration.chaos.helpers import assert_exactly_once, list_jobs
from tests.integration.cronjob.env import Env, minute_floor, wait_for
from tests.waiting import pause

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.timeout(240)]

CRONJOB_COUNT = 10
ROUNDS = ("restart", "compact", "restart+compact", "down-at-tick")


@pytest.fixture
def env(chaos_client: RESTClient, chaos_namespace: str) -> Iterator[Env]:
    e = Env(chaos_client, chaos_namespace, FakeClock(datetime.now(UTC)))
    try:
        yield e
    finally:
        e.stop_all()


def _settle(env: Env, predicate: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    """Wait for ``predicate`` while nudging the FakeClock (backoffs wait on it).

    The clock moves at most to 5 s before the next minute boundary, so settling never
    causes a tick of its own.
    """
    limit = minute_floor(env.clock.now()) + timedelta(seconds=55)

    def check() -> Any:
        value = predicate()
        if not value and env.clock.now() + timedelta(seconds=0.5) <= limit:
            env.clock.step(0.5)
        return value

    return wait_for(check, timeout=timeout, what=what)


def _cache_matches_list(env: Env, wired: CronJobController) -> bool:
    def versions(items: list[Any]) -> dict[str, str]:  # typed cached objects, or dicts
        return {meta.name(o): meta.resource_version(o) for o in items}

    for informers, resource in ((wired.job_informers, JOBS),
                                (wired.cronjob_informers, CRONJOBS)):
        cached = versions([o for i in informers for o in i.lister().list()])
        fresh = versions(env.client.list(resource, env.namespace)["items"])
        if cached != fresh:
            return False
    return True


def _change_behind_informers(env: Env, tick: datetime, index: int) -> None:
    """Writes the informers can only learn from a relist or re-watch."""
    for name in env.job_names():
        if name.endswith(f"-{int(tick.timestamp()) // 60}"):
            env.finish_job(name)
    env.client.create(JOBS, {"metadata": {"name": f"stray-{index}"}, "spec": {
        "suspend": True, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}},
        env.namespace)
    # Writes nobody here watches move etcd's head past every informer's resourceVersion.
    for i in range(5):
        env.client.create(CONFIGMAPS, {"metadata": {"name": f"bump-{index}-{i}"}},
                          env.namespace)


def test_apiserver_restarts_and_compaction_lose_no_run_and_caches_recover(
    env: Env, chaos_plane: ControlPlane, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    names = [f"dr-{i}" for i in range(CRONJOB_COUNT)]
    for name in names:
        env.create_cronjob(name, successfulJobsHistoryLimit=20)
    # Not before any creationTimestamp, so the first tick stepped to is due for every CronJob.
    env.clock.set_time(datetime.now(UTC))
    wired = env.start(workers=4)
    ticks: list[datetime] = []

    def tick_done(tick: datetime) -> bool:
        have = env.job_names()
        return all(job_name(n, tick) in have for n in names)

    first = env.next_minute()
    ticks.append(first)
    _settle(env, lambda: tick_done(first), "the first tick's Jobs")

    for index, disruption in enumerate(ROUNDS):
        if "restart" in disruption:
            chaos_plane.restart_apiserver()
        if disruption == "down-at-tick":
            chaos_plane.stop_apiserver()
        else:
            _change_behind_informers(env, ticks[-1], index)
        if "compact" in disruption:
            chaos_plane.compact_etcd()
        tick = env.next_minute()
        ticks.append(tick)
        if disruption == "down-at-tick":
            # Let the due syncs run into the dead apiserver before it comes back.
            pause(1.0)
            chaos_plane.start_apiserver()
            _change_behind_informers(env, ticks[-2], index)
        _settle(env, functools.partial(tick_done, tick), f"Jobs of tick {tick} after {disruption}")
        _settle(env, lambda: _cache_matches_list(env, wired),
                f"informer caches to match a fresh LIST after {disruption}")

    jobs = list_jobs(env.client, env.namespace)
    assert_exactly_once(jobs, names, ticks[0], ticks[-1])
    assert all(sum(1 for j in jobs if j["metadata"]["name"].startswith(f"{n}-"))
               == len(ticks) for n in names)
    messages = [r.getMessage() for r in caplog.records]
    assert any("watch expired" in m for m in messages), (
        "no re-watch was answered 410 Gone: compaction was not exercised")
    # A refused connection leaves the cache valid: re-watch, do not relist everything.
    relists = [m for m in messages if "list and watch failed" in m and "refused" in m]
    assert not relists, relists
