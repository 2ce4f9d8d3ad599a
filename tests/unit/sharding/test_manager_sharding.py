"""manager.add_extension(Sharding(...)): the sharded controller's informer is label-filtered,
its reconciler hands drained objects over, writes are fenced by the shard Lease, the sharder
needs the lead; the Manager itself knows nothing of shards."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import Configuration

from pyctrl import FencedClient, Manager, ManagerOptions, MetricsOptions, Request, api
from pyctrl.cache import DeletedFinalStateUnknown
from pyctrl.kube import CONFIGMAPS, JOBS, SECRETS
from pyctrl.kube.client import RESTClient
from pyctrl.models.batch_v1 import Job
from pyctrl.models.core_v1 import ConfigMap
from pyctrl.sharding import Sharder, Sharding, ShardingOptions, ShardReconciler, ShardWatch
from pyctrl.sharding.owned import StampingClient
from pyctrl.testing import FakeClient, FakeClock
from tests.unit.sharding.helpers import DRAIN, NS, SHARD, configmap, options

NO_RUNTIME_METRICS = ManagerOptions(metrics=MetricsOptions(runtime_metrics=False))


def _manager(sharding: ShardingOptions | None = None) -> Manager:
    clock = FakeClock()
    m = Manager(FakeClient(clock), NO_RUNTIME_METRICS, clock=clock)
    m.add_extension(Sharding(sharding or options("pod-a")))
    return m


def test_sharded_controller_watches_only_its_shard_and_wraps_the_reconciler() -> None:
    m = _manager()
    c = m.controller("mirror").for_(CONFIGMAPS).owns(SECRETS).complete(
        lambda req: None)
    names = sorted(i.name for i in m.informers.informers())
    assert names == ["configmaps[shard.sharding.pyctrl.io/mirror=pod-a]", "secrets"]
    assert isinstance(c.reconciler, ShardReconciler)
    other = m.controller("unsharded").for_(SECRETS).complete(lambda req: None)
    try:
        assert not isinstance(other.reconciler, ShardReconciler)
    finally:
        c.queue.shut_down()
        other.queue.shut_down()


def test_leader_election_is_created_for_the_sharder_and_writes_use_the_shard_lease() -> None:
    m = _manager()
    assert m.elector is not None and m.elector.describe() == "system/mirror-sharder"
    assert m.controller_gate is not None
    assert m.controller_gate.describe() == "system/mirror-shard-pod-a"
    entries = [e for e in m.runnables() if isinstance(e.runnable, Sharder)]
    assert len(entries) == 1 and entries[0].needs_leader
    assert isinstance(m.client_for_leader(), FencedClient)
    assert m.controller_gate.holds_lease() is False


def test_every_replica_runs_the_shard_watch_and_the_sharder_plans_from_it() -> None:
    m = _manager()
    watches = [e for e in m.runnables() if isinstance(e.runnable, ShardWatch)]
    assert len(watches) == 1 and not watches[0].needs_leader
    sharder = next(e.runnable for e in m.runnables() if isinstance(e.runnable, Sharder))
    assert isinstance(sharder, Sharder) and sharder.watch is watches[0].runnable


def test_a_rest_client_sharder_gets_a_write_budget_of_its_own() -> None:
    config = Configuration()
    config.host = "https://127.0.0.1:1"
    client = RESTClient(config, qps=5, burst=10)
    clock = FakeClock()
    m = Manager(client, NO_RUNTIME_METRICS, clock=clock)
    sharding = Sharding(options("pod-a", write_qps=300, write_burst=600))
    m.add_extension(sharding)
    own = sharding.sharder_client
    try:
        assert isinstance(own, RESTClient) and own is not client
        assert (own.rate_limiter.qps, own.rate_limiter.burst) == (300, 600)
    finally:
        client.close()
        assert isinstance(own, RESTClient)
        own.close()


def test_owned_object_events_enqueue_only_owners_in_this_shards_cache() -> None:
    # Through complete(): the handler the builder registers on the (unsharded) Secret
    # informer, feeding the controller's own queue.
    m = _manager()
    b = m.controller("mirror").for_(CONFIGMAPS).owns(SECRETS)
    c = b.complete(lambda req: None)
    try:
        b.informers_for(CONFIGMAPS)[0].get_store().add(configmap("mine", {SHARD: "pod-a"}))
        secrets = next(i for i in m.informers.informers() if i.name == "secrets")
        [listener] = secrets._processor.listeners()

        def secret(owner: str) -> dict[str, object]:
            return {"metadata": {"name": f"s-{owner}", "namespace": NS, "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": "u",
                 "controller": True}]}}

        listener.handler.on_add(secret("another-shards"), False)
        listener.handler.on_add(secret("mine"), False)
        assert len(c.queue) == 1 and c.queue.get() == Request(NS, "mine")
    finally:
        c.queue.shut_down()
    assert m.controller("unsharded").for_(SECRETS)._admit_owner() is None


def test_owned_resources_are_sharded_stamped_and_a_draining_owners_deletes_ignored() -> None:
    m = _manager(options("pod-a", owned=(SECRETS,)))
    deleted: list[object] = []
    b = m.controller("mirror").for_(CONFIGMAPS).owns(SECRETS, on_delete=deleted.append)
    c = b.complete(lambda req: None)
    try:
        names = sorted(i.name for i in m.informers.informers())
        assert names == ["configmaps[shard.sharding.pyctrl.io/mirror=pod-a]",
                         "secrets[shard.sharding.pyctrl.io/mirror=pod-a]"]
        owners = b.informers_for(CONFIGMAPS)[0].get_store()
        owners.add(configmap("mine", {SHARD: "pod-a"}))
        owners.add(configmap("leaving", {SHARD: "pod-a", DRAIN: "true"}))
        [secrets] = [i for i in m.informers.informers() if i.name.startswith("secrets")]
        [listener] = secrets._processor.listeners()

        def secret(owner: str) -> dict[str, object]:
            return {"metadata": {"name": f"s-{owner}", "namespace": NS, "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": "u",
                 "controller": True}]}}

        # relabelled away by the owner's new shard: no delete observed, nothing enqueued
        listener.handler.on_delete(secret("leaving"))
        assert deleted == [] and len(c.queue) == 0
        listener.handler.on_delete(secret("mine"))
        assert len(deleted) == 1 and c.queue.get() == Request(NS, "mine")
        stamping = m.client_for_leader()  # stamps, then fences (by the shard Lease)
        assert isinstance(stamping, StampingClient)
        assert isinstance(stamping.inner, FencedClient)
    finally:
        c.queue.shut_down()


def test_a_typed_for_kind_and_a_typed_owned_job_are_sharded_and_read_typed() -> None:
    """The CronJob operator's shape with kind classes: for_(Kind).owns(Job, on_delete=...)
    with owned=(JOBS,): the typed informers are label-filtered, the owners' admission and the
    delete observer read typed objects, the ShardReconciler reads the typed caches."""
    m = _manager(options("pod-a", owned=(JOBS,)))
    deleted: list[Job | DeletedFinalStateUnknown] = []
    b = m.controller("mirror").for_(ConfigMap).owns(Job, on_delete=deleted.append)
    ran: list[Request] = []
    c = b.complete(ran.append)
    try:
        names = sorted(i.name for i in m.informers.informers())
        assert names == ["configmaps[shard.sharding.pyctrl.io/mirror=pod-a]:typed",
                         "jobs[shard.sharding.pyctrl.io/mirror=pod-a]:typed"]
        owners: Any = b.informers_for(ConfigMap)[0].get_store()  # holds typed objects
        for cm in (configmap("mine", {SHARD: "pod-a"}),
                   configmap("leaving", {SHARD: "pod-a", DRAIN: "true"})):
            owners.add(api.decode(ConfigMap, cm))
        [jobs] = b.informers_for(Job)
        [listener] = jobs._processor.listeners()
        handler: Any = listener.handler  # handed typed objects

        def job(owner: str) -> Job:
            return api.decode(Job, {"metadata": {
                "name": f"j-{owner}", "namespace": NS, "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": "u",
                     "controller": True}]}})

        handler.on_delete(job("leaving"))
        assert deleted == [] and len(c.queue) == 0
        handler.on_delete(job("mine"))
        assert deleted == [job("mine")] and c.queue.get() == Request(NS, "mine")
        assert isinstance(c.reconciler, ShardReconciler)
        # read from the typed cache: this shard's owner runs, another shard's is skipped
        owners.add(api.decode(ConfigMap, configmap("theirs", {SHARD: "pod-b"})))
        c.reconciler.reconcile(Request(NS, "mine"))
        c.reconciler.reconcile(Request(NS, "theirs"))
        assert ran == [Request(NS, "mine")]
    finally:
        c.queue.shut_down()


def test_extensions_go_in_before_controllers_are_built() -> None:
    m = Manager(FakeClient(), NO_RUNTIME_METRICS)
    m.controller("mirror").for_(CONFIGMAPS)
    with pytest.raises(RuntimeError, match="before building controllers"):
        m.add_extension(Sharding(options("pod-a")))


def test_the_manager_does_not_know_what_a_shard_is() -> None:
    """Layering: sharding installs itself through the extension hooks; manager.py and
    builder.py neither import pyctrl.sharding nor mention shards."""
    root = Path(__file__).resolve().parents[3] / "pyctrl"
    for name in ("manager.py", "builder.py"):
        source = (root / name).read_text()
        imported = {node.module for node in ast.walk(ast.parse(source))
                    if isinstance(node, ast.ImportFrom) and node.module}
        assert not any(m.startswith("pyctrl.sharding") for m in imported), name
        assert "shard" not in source.lower(), name
