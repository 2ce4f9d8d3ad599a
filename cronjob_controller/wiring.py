"""Wiring: build the CronJob controller on a pyctrl Manager.

Contract: :func:`build` registers, on the given manager and through its Builder
(``manager.controller("cronjob").for_(CronJob).owns(Job, on_delete=...)``, the kind classes:
:class:`cronjob_controller.crd.CronJob` and ``pyctrl.models.batch_v1.Job``), one CronJob
informer and one Job informer per watched namespace (or one cluster-wide pair), the Jobs
indexed by controller owner UID, event handlers that only enqueue Requests, and a
:class:`pyctrl.Controller` running :class:`CronJobReconciler` with ``workers`` threads on a
:class:`pyctrl.PriorityQueue`
(initial-list and resync events at low priority, with aging; ``priority_queue=False`` keeps
the plain FIFO RateLimitingQueue). A Job's delete notification first hands
its final state to :meth:`CronJobReconciler.observe_deleted_job` (so a run whose Job vanished
before the status recorded it is never created twice), then enqueues the owner. The
reconciler reads the Builder's typed listers (``builder.lister_for(CronJob)``, one per kind,
merged over the namespaces) and writes
through ``manager.client_for_leader()``; the event broadcaster defers events while the
queue holds work. With ``watch_clock`` (the default) a
:class:`cronjob_controller.clockwatch.ClockJumpWatch` runnable on the manager re-enqueues every
CronJob after a wall-clock jump. It is used
by ``__main__`` and by the integration tests, so tests run the same wiring as production
(with a FakeClock injected).

Sharding (``manager.add_extension(Sharding(ShardingOptions(controller="cronjob",
owned=(JOBS,), ...)))``, the ``--sharding`` flag): the CronJob informers list/watch only this
shard's CronJobs (by the shard label) and the reconciler is wrapped in a
:class:`pyctrl.sharding.ShardReconciler` (drain handover). With ``owned=(JOBS,)`` (what
``--sharding`` sets) the Jobs are sharded too: each Job is created with its CronJob's shard
label (``client_for_leader`` stamps it), the Job informers list/watch only this shard's Jobs,
and a CronJob that moves takes its Jobs' names along; its new shard relabels them and does not
sync the CronJob until its Job cache holds them all, so a Forbid never misses an active Job
(:mod:`pyctrl.sharding.owned`). A Job leaving this shard's cache that way is not a deleted Job
(its CronJob, draining, is no longer admitted here). Without ``owned`` every replica caches
every Job and Job events of other shards' CronJobs cost one cache miss each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cronjob_controller.clockwatch import ClockJumpWatch
from cronjob_controller.controller import CronJobReconciler, ObjectSource
from cronjob_controller.crd import CronJob
from pyctrl import Controller, Manager, Request
from pyctrl.cache import DeletedFinalStateUnknown, SharedIndexInformer
from pyctrl.kube import JOBS
from pyctrl.models.batch_v1 import Job
from pyctrl.rbac import PolicyRule

__all__ = ["CONTROLLER_NAME", "CronJobController", "build", "setup"]

CONTROLLER_NAME = "cronjob"


class _Listing(ObjectSource[CronJob], Protocol):
    def list(self) -> Sequence[CronJob]: ...


@dataclass
class CronJobController:
    """What :func:`build` made: the controller, its reconciler and informers."""

    controller: Controller[Request]
    reconciler: CronJobReconciler
    cronjob_informers: list[SharedIndexInformer]
    job_informers: list[SharedIndexInformer]
    cronjobs: _Listing

    def resync_all(self) -> None:
        """Enqueue every known CronJob (after a wall-clock jump)."""
        for obj in self.cronjobs.list():
            self.controller.queue.add(Request.from_object(obj))


def build(manager: Manager, *, namespaces: Sequence[str] = (), workers: int = 16,
          defer_status_after_create: bool = True,
          priority_queue: bool = True, watch_clock: bool = True) -> CronJobController:
    """Register the CronJob controller on ``manager`` (see module docstring)."""
    # A PriorityQueue: objects from the initial lists and resyncs wait behind creates and
    # real changes (a CronJob created during a start is synced first), aging bounds their wait.
    def observe_deleted_job(job: Job | Mapping[str, Any] | DeletedFinalStateUnknown) -> None:
        reconciler.observe_deleted_job(job)  # made below, once the listers are handed out

    # Every watch is declared before a lister is handed out: an extension may filter the
    # owned Jobs too (sharding with owned=(Job,)), and a lister follows its watch.
    # The reconciler creates Jobs and deletes old ones (history); it never updates them.
    builder = (manager.controller(CONTROLLER_NAME, workers=workers)
               .with_options(namespaces=namespaces or None, priority_queue=priority_queue)
               .for_(CronJob)
               .owns(Job, on_delete=observe_deleted_job, writes=("create", "delete")))
    cronjobs = builder.lister_for(CronJob)  # this shard's CronJobs when sharded
    # Writes (Jobs, status, and the events of the manager's recorder) go through the
    # leader-scoped client: a deposed leader's reconciles stop at their next write.
    reconciler = CronJobReconciler(
        manager.client_for_leader(), cronjobs, builder.lister_for(Job),
        manager.event_recorder("cronjob-controller"),
        clock=manager.clock, registry=manager.registry,
        defer_status_after_create=defer_status_after_create,
    )
    controller = (builder.rbac(PolicyRule.of(JOBS, "create", reason=(
                      "the template check dry-runs (dryRun=All) the Job a template makes")))
                  .complete(reconciler))
    # Job creates are the critical writes at a minute tick; the events describing them wait
    # until the queue has drained, or at the broadcaster's floor rate, and none longer than
    # its max_defer.
    queue = controller.queue
    manager.event_broadcaster().set_defer_while(lambda: len(queue) > 0)
    wired = CronJobController(controller, reconciler, builder.informers_for(CronJob),
                              builder.informers_for(Job), cronjobs)
    if watch_clock:
        # Not leader-gated: with sharding every replica's workers run, each needs the watch.
        manager.add(ClockJumpWatch(manager.clock, wired.resync_all))
    return wired


def setup(manager: Manager) -> None:
    """Build the controller as deployed (``python -m pyctrl gen rbac`` reads it)."""
    build(manager)
