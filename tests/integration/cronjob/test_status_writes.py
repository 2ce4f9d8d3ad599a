"""A status someone else writes between a Job's create and the deferred status write is kept.

On the real API server, the sync is driven directly with caches the test controls, so the
race window (the CronJob cache has not seen the other write yet) is open every time instead of
now and then: the reconciler creates the run's Job (status write deferred), another writer
sets ``status.lastScheduleTime`` through the status subresource (a restore tool seeding it,
later than the run), and the next sync works from the stale CronJob. Its status patch carries
the cached resourceVersion, so the API server refuses it (409) instead of overwriting the other
write; once the cache has the newer CronJob the sync writes its own fields and keeps the
other writer's. 50 CronJobs, 50 races; before the optimistic lock the seeded value was lost
every time in this setup.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from cronjob_controller.api import CRONJOBS, CronJob
from cronjob_controller.controller import CronJobReconciler
from cronjob_controller.jobs import job_name
from cronjob_controller.statuswrite import CACHE_WAIT_SECONDS
from pyctrl import Request, RESTClient
from pyctrl.api import decode
from pyctrl.cache import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    Indexer,
    IndexerLister,
    controller_uid_index_func,
    meta_namespace_index_func,
)
from pyctrl.kube import JOBS, format_time
from pyctrl.models.batch_v1 import Job
from pyctrl.testing import FakeClock, FakeRecorder
from tests.integration.cronjob.env import cronjob_body, minute_floor

RACES = 50


def _typed(cls: type[Any], raw: dict[str, Any]) -> Any:
    """``raw`` as a typed informer caches it (the Indexer's signature says dict)."""
    return decode(cls, raw)


def test_concurrent_status_write_between_create_and_deferred_write_is_kept(
        client: RESTClient, namespace: str) -> None:
    clock = FakeClock(datetime.now(UTC) + timedelta(minutes=2))  # a run is due
    cronjobs = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    jobs = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func,
                             CONTROLLER_UID_INDEX: controller_uid_index_func})
    reconciler = CronJobReconciler(client, IndexerLister[CronJob](cronjobs, CRONJOBS),
                                   IndexerLister[Job](jobs, JOBS), FakeRecorder(),
                                   clock=clock)
    due = minute_floor(clock.now())
    seeded = format_time(due + timedelta(hours=1))
    kept = conflicts = 0
    for i in range(RACES):
        name = f"race-{i}"
        request = Request(namespace, name)
        cronjobs.add(_typed(CronJob, client.create(CRONJOBS, cronjob_body(name), namespace)))

        reconciler.reconcile(request)  # creates the Job; the status write waits
        jobs.add(_typed(Job, client.get(JOBS, job_name(name, due), namespace)))
        client.patch(CRONJOBS, name, {"status": {"lastScheduleTime": seeded}}, namespace,
                     subresource="status")
        stale = reconciler.reconcile(request)
        if stale is not None and stale.requeue_after is not None \
                and stale.requeue_after <= CACHE_WAIT_SECONDS:
            conflicts += 1
        # the cache catches up
        cronjobs.update(_typed(CronJob, client.get(CRONJOBS, name, namespace)))
        reconciler.reconcile(request)

        status = client.get(CRONJOBS, name, namespace).get("status") or {}
        if (status.get("lastScheduleTime") == seeded
                and [r["name"] for r in status.get("active", [])] == [job_name(name, due)]):
            kept += 1
    assert (kept, conflicts) == (RACES, RACES)
