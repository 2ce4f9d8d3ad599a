"""Shared bits of the sharding unit tests."""

from __future__ import annotations

from typing import Any

from pyctrl.clock import Clock
from pyctrl.kube import CONFIGMAPS, LEASES
from pyctrl.sharding import HashRing, ShardingOptions
from pyctrl.testing import FakeClient

NS = "apps"


def options(shard_id: str = "s1", **kw: Any) -> ShardingOptions:
    return ShardingOptions(controller="mirror", shard_id=shard_id, resource=CONFIGMAPS,
                           lease_namespace="system", lease_duration=15.0,
                           renew_deadline=10.0, retry_period=2.0, **kw)


def lease(shard: str, holder: str | None = None, renew: str = "t0",
          duration: int = 15) -> dict[str, Any]:
    return {"apiVersion": LEASES.api_version, "kind": LEASES.kind,
            "metadata": {"name": f"mirror-shard-{shard}", "namespace": "system",
                         "labels": {"sharding.pyctrl.io/controller": "mirror",
                                    "sharding.pyctrl.io/shard": shard}},
            "spec": {"holderIdentity": shard if holder is None else holder,
                     "leaseDurationSeconds": duration, "renewTime": renew}}


def configmap(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NS, "labels": dict(labels or {})},
            "data": {"k": "v"}}


SHARD = "shard.sharding.pyctrl.io/mirror"
DRAIN = "drain.sharding.pyctrl.io/mirror"


def two_shards(clock: Clock) -> tuple[FakeClient, dict[str, str]]:
    """Shards a (Lease of 60 s) and b (15 s), seen at the clock's start; every one of 40
    ConfigMaps already on its ring shard, so no pass writes anything until b expires."""
    client = FakeClient(clock)
    ring = HashRing(["a", "b"])
    owners = {f"cm-{i}": ring.shard_for(f"{NS}/cm-{i}") or "" for i in range(40)}
    for name, shard in owners.items():
        client.add_object(CONFIGMAPS, configmap(name, {SHARD: shard}))
    client.add_object(LEASES, lease("a", duration=60))
    client.add_object(LEASES, lease("b", duration=15))
    return client, owners
