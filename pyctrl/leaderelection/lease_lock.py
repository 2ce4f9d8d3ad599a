"""LeaseLock: a :class:`ResourceLock` over a ``coordination.k8s.io/v1`` Lease.

Contract: the record lives in the Lease's spec (holderIdentity, leaseDurationSeconds,
acquireTime, renewTime, leaseTransitions); times are written as MicroTime
(``2006-01-02T15:04:05.000000Z``). ``update`` sends the resourceVersion of the Lease this lock
last read or wrote, so a concurrent writer makes it fail with Conflict (optimistic
concurrency); the lock never blindly overwrites. Failures propagate as
:mod:`pyctrl.errors` types. ``labels`` are set on a Lease this lock creates (updates send the
Lease last read, so they keep whatever labels it has).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from pyctrl.kube import meta
from pyctrl.kube.interface import Client, RawObject
from pyctrl.kube.resource import LEASES
from pyctrl.leaderelection.lock import LeaderElectionRecord

__all__ = ["LeaseLock"]


def record_from_lease(lease: RawObject) -> LeaderElectionRecord:
    """The leader-election record a Lease object holds (its spec)."""
    spec = lease.get("spec") or {}
    return LeaderElectionRecord(
        holder_identity=str(spec.get("holderIdentity") or ""),
        lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=meta.parse_micro_time(spec.get("acquireTime")),
        renew_time=meta.parse_micro_time(spec.get("renewTime")),
        leader_transitions=int(spec.get("leaseTransitions") or 0),
    )


def _spec_from_record(record: LeaderElectionRecord) -> RawObject:
    spec: RawObject = {
        "holderIdentity": record.holder_identity,
        "leaseDurationSeconds": record.lease_duration_seconds,
        "leaseTransitions": record.leader_transitions,
    }
    if record.acquire_time is not None:
        spec["acquireTime"] = meta.format_micro_time(record.acquire_time)
    if record.renew_time is not None:
        spec["renewTime"] = meta.format_micro_time(record.renew_time)
    return spec


class LeaseLock:
    """Leader-election lock stored in the Lease ``namespace/name``."""

    def __init__(self, client: Client, namespace: str, name: str, identity: str, *,
                 labels: Mapping[str, str] | None = None) -> None:
        if not identity:
            raise ValueError("LeaseLock needs a non-empty identity")
        self._labels = dict(labels or {})
        self._client = client
        self._namespace = namespace
        self._name = name
        self._identity = identity
        self._lease: RawObject | None = None  # the Lease as last read or written (for its RV)

    @property
    def namespace(self) -> str:
        return self._namespace

    @property
    def name(self) -> str:
        return self._name

    def get(self) -> LeaderElectionRecord:
        lease = self._client.get(LEASES, self._name, self._namespace)
        self._lease = lease
        return record_from_lease(lease)

    def create(self, record: LeaderElectionRecord) -> None:
        lease: RawObject = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": self._name, "namespace": self._namespace,
                         **({"labels": dict(self._labels)} if self._labels else {})},
            "spec": _spec_from_record(record),
        }
        self._lease = self._client.create(LEASES, lease, self._namespace)

    def update(self, record: LeaderElectionRecord) -> None:
        if self._lease is None:
            raise RuntimeError("LeaseLock.update before get/create")
        lease = copy.deepcopy(self._lease)
        lease["spec"] = _spec_from_record(record)
        self._lease = self._client.update(LEASES, lease, self._namespace)

    def identity(self) -> str:
        return self._identity

    def describe(self) -> str:
        return f"{self._namespace}/{self._name}"
