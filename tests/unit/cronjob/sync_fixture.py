"""A sample-controller style fixture for unit tests of the CronJob sync.

Contract: a :class:`Fixture` is one controller's view of a tiny world at a fixed instant.

* Objects are seeded twice, as an informer would see them: into a :class:`FakeClient` (the
  API server, which the reconciler writes to) and into ``pyctrl.cache`` Indexers read through
  IndexerListers (the caches the reconciler reads from; Jobs are indexed by controller UID),
  which hold typed objects, decoded once as they go in, as a typed informer's do. Seeding
  records no client action. ``cache=False`` / ``server=False`` let a test make the two
  disagree, as a lagging informer does.
* Time is a :class:`FakeClock` at :data:`NOW` unless a test moves it. A seeded object's
  ``creationTimestamp`` is honoured (the fake server stamps the clock's time, so the fixture
  moves the clock there for the seed and back).
* :meth:`Fixture.sync` runs ``CronJobReconciler.reconcile(key)`` directly; the test then
  asserts :meth:`Fixture.actions` (verb, plural, name, subresource, in call order),
  :meth:`Fixture.events` ((type, reason), in order) and the returned Result.
* :meth:`Fixture.refresh` is "the informers caught up": the caches become exactly what the
  server holds. :meth:`Fixture.clear` forgets actions and events between steps of a test.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import orjson
from prometheus_client import CollectorRegistry

from cronjob_controller.api import (
    CRONJOBS,
    SCHEDULED_TIMESTAMP_ANNOTATION,
    CronJob,
    format_rfc3339,
)
from cronjob_controller.controller import CronJobReconciler
from pyctrl import Request, Result, api
from pyctrl.cache import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    Indexer,
    IndexerLister,
    Indexers,
    controller_uid_index_func,
    meta_namespace_index_func,
)
from pyctrl.cache.typed import TypedDecoder
from pyctrl.kube import JOBS, RawObject, Resource
from pyctrl.models.batch_v1 import Job
from pyctrl.testing import FakeClient, FakeClock, FakeRecorder

__all__ = [
    "CREATED",
    "KEY",
    "NAMESPACE",
    "NOW",
    "Fixture",
    "at",
    "fmt",
    "new_cronjob",
    "new_job",
    "run_name",
]

NAMESPACE = "default"
KEY = f"{NAMESPACE}/hello"
# A fixed instant 30 s past a round minute (and past a */5 boundary).
NOW = datetime(2026, 3, 10, 12, 0, 30, tzinfo=UTC)
CREATED = datetime(2026, 3, 10, 11, 52, tzinfo=UTC)  # default creationTimestamp

Call = tuple[str, str, str | None, str | None]
Finished = Literal["Complete", "Failed"]


def at(hhmm: str, *, day: int = 10, second: int = 0) -> datetime:
    """``"11:55"`` on 2026-03-``day`` in UTC."""
    hour, minute = (int(p) for p in hhmm.split(":"))
    return datetime(2026, 3, day, hour, minute, second, tzinfo=UTC)


def fmt(t: datetime) -> str:
    """metav1.Time text (UTC, seconds)."""
    return format_rfc3339(t.astimezone(UTC))


def run_name(cronjob_name: str, scheduled: datetime) -> str:
    """The Job name the contract promises: ``<name>-<unix minutes>``."""
    return f"{cronjob_name}-{int(scheduled.timestamp()) // 60}"


def new_cronjob(
    name: str = "hello",
    *,
    schedule: str = "*/5 * * * *",
    created: datetime = CREATED,
    status: dict[str, Any] | None = None,
    finalizers: list[str] | None = None,
    **spec: Any,
) -> RawObject:
    """A CronJob as a user would apply it (spec keys in camelCase via ``spec``)."""
    body: dict[str, Any] = {
        "schedule": schedule,
        "jobTemplate": {
            "metadata": {
                "name": "ignored", "generateName": "ignored-",
                "labels": {"app": name}, "annotations": {"team": "a"},
            },
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox"}]}}},
        },
    }
    body.update(spec)
    meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE,
                            "creationTimestamp": fmt(created)}
    if finalizers:
        meta["finalizers"] = finalizers
    obj: RawObject = {"apiVersion": CRONJOBS.api_version, "kind": "CronJob",
                   "metadata": meta, "spec": body}
    if status is not None:
        obj["status"] = status
    return obj


def new_job(
    cronjob: RawObject,
    scheduled: datetime,
    *,
    finished: Finished | None = None,
    started: datetime | None = None,
    completed: datetime | None = None,
    owner_uid: str | None = None,
    name: str | None = None,
    annotate: bool = True,
) -> RawObject:
    """A Job of ``cronjob``'s run at ``scheduled`` (owner: the CronJob, unless ``owner_uid``
    names another one; ``""`` means no owner at all)."""
    cj_meta = cronjob["metadata"]
    uid = cj_meta["uid"] if owner_uid is None else owner_uid
    meta: dict[str, Any] = {
        "name": name or run_name(cj_meta["name"], scheduled),
        "namespace": cj_meta["namespace"],
        "creationTimestamp": fmt(scheduled),
        "annotations": {SCHEDULED_TIMESTAMP_ANNOTATION: fmt(scheduled)} if annotate else {},
    }
    if uid:
        meta["ownerReferences"] = [{
            "apiVersion": CRONJOBS.api_version, "kind": "CronJob", "name": cj_meta["name"],
            "uid": uid, "controller": True, "blockOwnerDeletion": True}]
    status: dict[str, Any] = {"startTime": fmt(started or scheduled)}
    if finished is not None:
        end = completed or (started or scheduled) + timedelta(seconds=30)
        status["conditions"] = [{"type": finished, "status": "True"}]
        if finished == "Complete":
            status["completionTime"] = fmt(end)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"template": {}}, "status": status}


class _TypedIndexer(Indexer):
    """An Indexer of typed objects: the dicts a test seeds are decoded on the way in, by the
    typed informer's own decoder (an undecodable one becomes its stand-in, as in production)."""

    __slots__ = ("_decoder",)

    def __init__(self, cls: type[api.Object], indexers: Indexers) -> None:
        super().__init__(indexers=indexers)
        self._decoder = TypedDecoder(cls)

    def _decoded(self, obj: RawObject) -> RawObject:
        decoded: RawObject = self._decoder.item(orjson.dumps(obj))
        return decoded

    def update(self, obj: RawObject) -> None:
        super().update(self._decoded(obj))

    def replace(self, objs: Iterable[RawObject], resource_version: str = "") -> None:
        super().replace([self._decoded(o) for o in objs], resource_version)


class Fixture:
    """The world one sync sees (see module docstring)."""

    def __init__(self, now: datetime = NOW, *, defer_status_after_create: bool = True,
                 registry: CollectorRegistry | None = None) -> None:
        self.clock = FakeClock(now)
        self.client = FakeClient(self.clock)
        self.recorder = FakeRecorder()
        self.cronjob_indexer = _TypedIndexer(CronJob, {
            NAMESPACE_INDEX: meta_namespace_index_func})
        self.job_indexer = _TypedIndexer(Job, {
            NAMESPACE_INDEX: meta_namespace_index_func,
            CONTROLLER_UID_INDEX: controller_uid_index_func,
        })
        self.reconciler = self.new_reconciler(
            registry=registry, defer_status_after_create=defer_status_after_create)

    def new_reconciler(self, *, registry: CollectorRegistry | None = None,
                       defer_status_after_create: bool = True) -> CronJobReconciler:
        """A reconciler over this fixture's caches with nothing in memory (a new process)."""
        return CronJobReconciler(
            self.client, IndexerLister[CronJob](self.cronjob_indexer, CRONJOBS),
            IndexerLister[Job](self.job_indexer, JOBS),
            self.recorder, clock=self.clock, registry=registry,
            defer_status_after_create=defer_status_after_create,
        )

    # -- seeding ------------------------------------------------------------------------
    def _seed(self, resource: Resource, obj: RawObject, indexer: Indexer, *, cache: bool,
              server: bool) -> RawObject:
        stored: RawObject = copy.deepcopy(obj)
        if server:
            created = obj.get("metadata", {}).get("creationTimestamp")
            now = self.clock.now()
            if created:
                self.clock.set_time(datetime.fromisoformat(created))
            try:
                stored = self.client.add_object(resource, obj)
            finally:
                self.clock.set_time(now)
        if cache:
            indexer.add(copy.deepcopy(stored))
        return stored

    def add_cronjob(self, obj: RawObject, *, cache: bool = True) -> RawObject:
        """Seed a CronJob; returns it as stored (with the uid the server gave it)."""
        return self._seed(CRONJOBS, obj, self.cronjob_indexer, cache=cache, server=True)

    def add_job(self, obj: RawObject, *, cache: bool = True, server: bool = True) -> RawObject:
        """Seed a Job; returns it as stored."""
        if not server:
            obj = copy.deepcopy(obj)
            obj["metadata"].setdefault("uid", f"uid-{obj['metadata']['name']}")
        return self._seed(JOBS, obj, self.job_indexer, cache=cache, server=server)

    def mark_deleting(self, name: str = "hello") -> None:
        """Delete a CronJob that has a finalizer: it stays, with a deletionTimestamp."""
        self.client.delete(CRONJOBS, name, NAMESPACE)
        self.refresh()
        self.clear()

    # -- running ------------------------------------------------------------------------
    def sync(self, key: str = KEY) -> Result | None:
        return self.reconciler.reconcile(Request.from_key(key))

    def refresh(self) -> None:
        """The informers caught up: each cache now holds exactly what the server holds."""
        self.cronjob_indexer.replace(self.client.list_objects(CRONJOBS))
        self.job_indexer.replace(self.client.list_objects(JOBS))

    def clear(self) -> None:
        self.client.clear_actions()
        self.recorder.events.clear()
        self.recorder.records.clear()

    def settle(self, key: str = KEY) -> None:
        """Sync until a sync writes nothing (the steady state), then forget the history."""
        for _ in range(5):
            before = len(self.actions())
            self.sync(key)
            self.refresh()
            if len(self.actions()) == before:
                self.clear()
                return
        raise AssertionError(f"no steady state after 5 syncs: {self.actions()}")

    # -- observing ----------------------------------------------------------------------
    def actions(self) -> list[Call]:
        """(verb, plural, name, subresource) of every client call, in order (dry runs, which
        change nothing, are in :meth:`dry_runs`)."""
        return [(a.verb, a.resource.plural, a.name, a.subresource)
                for a in self.client.actions
                if a.verb not in ("list", "watch") and not a.options.get("dry_run")]

    def dry_runs(self) -> list[Any]:
        """The body of every dry-run create, in order."""
        return [a.object for a in self.client.actions if a.options.get("dry_run")]

    def events(self) -> list[tuple[str, str]]:
        return [(e.type, e.reason) for e in self.recorder.records]

    def messages(self, reason: str) -> list[str]:
        return [e.message for e in self.recorder.records if e.reason == reason]

    def created_jobs(self) -> list[Any]:
        return [a.object for a in self.client.actions
                if a.verb == "create" and a.resource == JOBS and not a.options.get("dry_run")]

    def deletes(self) -> list[tuple[str | None, dict[str, object]]]:
        return [(a.name, dict(a.options)) for a in self.client.actions if a.verb == "delete"]

    def status_writes(self) -> list[Any]:
        """The ``status`` of every patch of the CronJob status subresource."""
        return [a.object["status"] for a in self.client.actions
                if a.verb == "patch" and a.resource == CRONJOBS and a.subresource == "status"]

    def status(self, name: str = "hello") -> Any:
        """The CronJob's status as the server holds it now."""
        return self.client.get_object(CRONJOBS, name, NAMESPACE).get("status") or {}

    def ready(self, name: str = "hello") -> Any:
        return next(c for c in self.status(name).get("conditions", [])
                    if c["type"] == "Ready")

    def job_names(self) -> list[str]:
        return [o["metadata"]["name"] for o in self.client.list_objects(JOBS, NAMESPACE)]
