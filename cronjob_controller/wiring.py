"""Wiring: build the CronJob controller on a pyctrl Manager.

Contract: :func:`build` registers, on the given manager, one CronJob informer and one Job
informer per watched namespace (or one cluster-wide pair), the Jobs indexed by controller
owner UID, event handlers that only enqueue keys, and a :class:`pyctrl.Controller` running
:class:`CronJobReconciler` with ``workers`` threads on a :class:`pyctrl.PriorityQueue`
(initial-list and resync events at low priority, with aging; ``priority_queue=False`` keeps
the plain FIFO RateLimitingQueue). A Job's delete notification first hands
its final state to :meth:`CronJobReconciler.observe_deleted_job` (so a run whose Job vanished
before the status recorded it is never created twice), then enqueues the owner. It is used
by ``__main__`` and by the integration tests, so tests run the same wiring as production
(with a FakeClock injected).

Sharding (``Manager(sharding=ShardingOptions(controller="cronjob", ...))``, the
``--sharding`` flag): the CronJob informers list/watch only this shard's CronJobs (by the
shard label) and the reconciler is wrapped in a :class:`pyctrl.sharding.ShardReconciler`
(drain handover). The Job informers stay unfiltered: a CronJob that moves finds its Jobs in
the new shard's cache at once, with no Job relabelling and no window where its active Jobs
are invisible (which could start a Forbid run twice). The price is memory: every replica
caches every Job (bounded by the history limits, a few per CronJob), only the CronJobs are
divided by N; Job events of other shards' CronJobs cost one cache miss each.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from cronjob_controller.api import CRONJOBS, GROUP, KIND
from cronjob_controller.controller import CronJobReconciler, clock_jump_watch
from pyctrl import Controller, Manager, PriorityQueue, enqueue_object, enqueue_owner
from pyctrl.cache import (
    CONTROLLER_UID_INDEX,
    DeletedFinalStateUnknown,
    Lister,
    ResourceEventHandler,
    SharedIndexInformer,
    controller_uid_index_func,
)
from pyctrl.errors import NotFound
from pyctrl.kube import JOBS, Object
from pyctrl.sharding import ShardReconciler

__all__ = ["CronJobController", "MergedSource", "build"]

CONTROLLER_NAME = "cronjob"


class MergedSource:
    """Listers of several namespaces read as one (``get`` routes by namespace)."""

    def __init__(self, listers: dict[str | None, Lister]) -> None:
        self._listers = listers

    def get(self, namespace: str | None, name: str) -> Object:
        lister = self._listers.get(namespace) or self._listers.get(None)
        if lister is None:
            raise NotFound(f"namespace {namespace!r} is not watched", 404, "NotFound")
        return lister.get(namespace, name)

    def by_index(self, index: str, value: str) -> list[Object]:
        out: list[Object] = []
        for lister in self._listers.values():
            out.extend(lister.by_index(index, value))
        return out

    def all_keys(self) -> list[str]:
        return [f"{o['metadata']['namespace']}/{o['metadata']['name']}"
                for lister in self._listers.values() for o in lister.list()]


class _RecordDeletedJobs:
    """Wraps the owner-enqueueing Job handler: record a deleted Job's run, then enqueue."""

    def __init__(self, inner: ResourceEventHandler, reconciler: CronJobReconciler) -> None:
        self._inner = inner
        self._reconciler = reconciler

    def on_add(self, obj: Object, is_in_initial_list: bool) -> None:
        self._inner.on_add(obj, is_in_initial_list)

    def on_update(self, old: Object, new: Object) -> None:
        self._inner.on_update(old, new)

    def on_delete(self, obj: Object | DeletedFinalStateUnknown) -> None:
        try:
            self._reconciler.observe_deleted_job(obj)
        except Exception:  # never raise into the informer
            structlog.get_logger(__name__).exception("recording a deleted job failed")
        self._inner.on_delete(obj)


@dataclass
class CronJobController:
    """What :func:`build` made: the controller, its reconciler and informers."""

    controller: Controller
    reconciler: CronJobReconciler
    cronjob_informers: list[SharedIndexInformer]
    job_informers: list[SharedIndexInformer]
    cronjobs: MergedSource

    def resync_all(self) -> None:
        """Enqueue every known CronJob (after a wall-clock jump)."""
        for key in self.cronjobs.all_keys():
            self.controller.queue.add(key)

    def start_clock_watch(self, stop: threading.Event) -> threading.Thread:
        """Run the wall-clock jump watch in a named thread until ``stop``."""
        thread = threading.Thread(
            target=clock_jump_watch, args=(self.reconciler.clock, stop, self.resync_all),
            name="cronjob-clock-watch", daemon=True,
        )
        thread.start()
        return thread


def build(manager: Manager, *, namespaces: Sequence[str] = (), workers: int = 16,
          defer_status_after_create: bool = True,
          priority_queue: bool = True) -> CronJobController:
    """Register the CronJob controller on ``manager`` (see module docstring)."""
    scopes: list[str | None] = list(dict.fromkeys(namespaces)) or [None]
    sharding = manager.sharding
    if sharding is not None and sharding.controller != CONTROLLER_NAME:
        sharding = None
    cronjob_informers = [manager.informers.informer_for(
        CRONJOBS, namespace=ns, label_selector=sharding.selector if sharding else None)
        for ns in scopes]
    job_informers = [
        manager.informers.informer_for(
            JOBS, namespace=ns, indexers={CONTROLLER_UID_INDEX: controller_uid_index_func})
        for ns in scopes
    ]
    cronjobs = MergedSource({ns: i.lister() for ns, i in zip(scopes, cronjob_informers,
                                                                 strict=True)})
    job_source = MergedSource({ns: i.lister() for ns, i in zip(scopes, job_informers,
                                                                   strict=True)})
    # Writes (Jobs, status, and the events of the manager's recorder) go through the
    # leader-scoped client: a deposed leader's reconciles stop at their next write.
    reconciler = CronJobReconciler(
        manager.client_for_leader(), cronjobs, job_source,
        manager.event_recorder("cronjob-controller"),
        clock=manager.clock, registry=manager.registry,
        defer_status_after_create=defer_status_after_create,
    )
    sharded = (ShardReconciler(reconciler, cronjobs, manager.client_for_leader(), sharding,
                               clock=manager.clock) if sharding is not None else reconciler)
    # A PriorityQueue: objects from the initial lists and resyncs wait behind creates and
    # real changes (a CronJob created during a start is synced first), aging bounds their wait.
    controller = Controller(
        CONTROLLER_NAME, sharded, workers=workers, clock=manager.clock,
        registry=manager.registry, wait_for=[*cronjob_informers, *job_informers],
        queue=PriorityQueue[str](name=CONTROLLER_NAME, clock=manager.clock,
                            registry=manager.registry) if priority_queue else None,
    )
    # Job creates are the critical writes at a minute tick; the events describing them wait
    # until the queue has drained, or at the broadcaster's floor rate, and none longer than
    # its max_defer.
    queue = controller.queue
    manager.event_broadcaster().set_defer_while(lambda: len(queue) > 0)
    for informer in cronjob_informers:
        informer.add_event_handler(enqueue_object(controller.queue))
    for informer in job_informers:
        informer.add_event_handler(_RecordDeletedJobs(
            enqueue_owner(controller.queue, GROUP, KIND), reconciler))
    manager.add_controller(controller)
    return CronJobController(controller, reconciler, cronjob_informers, job_informers,
                             cronjobs)
