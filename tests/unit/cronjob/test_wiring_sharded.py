"""build() under the Sharding extension with owned Jobs (what --sharding runs): the CronJob
and Job informers are both filtered by this shard's label, the reconciler reads them, and
the Jobs it creates carry the label."""

from __future__ import annotations

from cronjob_controller.api import CRONJOBS
from cronjob_controller.wiring import build
from pyctrl import Manager, ManagerOptions, MetricsOptions
from pyctrl.kube import JOBS
from pyctrl.sharding import Sharding, ShardingOptions, ShardReconciler
from pyctrl.sharding.owned import StampingClient
from pyctrl.testing import FakeClient, FakeClock


def test_sharded_build_filters_cronjobs_and_jobs_by_the_shard_label() -> None:
    clock = FakeClock()
    manager = Manager(FakeClient(clock), ManagerOptions(
        metrics=MetricsOptions(runtime_metrics=False)), clock=clock)
    manager.add_extension(Sharding(ShardingOptions(
        controller="cronjob", shard_id="pod-a", resource=CRONJOBS, owned=(JOBS,))))
    wired = build(manager, watch_clock=False)
    try:
        selector = "shard.sharding.pyctrl.io/cronjob=pod-a"
        # One typed informer per kind, each listing only this shard's objects.
        assert sorted(i.name for i in manager.informers.informers()) == [
            f"cronjobs[{selector}]:typed", f"jobs[{selector}]:typed"]
        assert [i.name for i in wired.job_informers] == [f"jobs[{selector}]:typed"]
        assert isinstance(wired.controller.reconciler, ShardReconciler)
        assert isinstance(wired.reconciler.client, StampingClient)
    finally:
        wired.controller.queue.shut_down()
