"""The leader-election record and the lock protocol the elector campaigns on.

Contract: a :class:`ResourceLock` stores one :class:`LeaderElectionRecord` with optimistic
concurrency. ``get`` raises :class:`pyctrl.errors.NotFound` when no record exists yet;
``create`` fails with AlreadyExists when someone else created it first; ``update`` fails with
Conflict when the record changed since this lock last read or wrote it. Any other failure is
an :class:`pyctrl.errors.ApiError`. A lock is used by one elector (one thread at a time).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

__all__ = ["LeaderElectionRecord", "ResourceLock"]


@dataclass(frozen=True)
class LeaderElectionRecord:
    """Who holds the lock and for how long (the fields of a Lease's spec).

    ``holder_identity`` is "" when the lock was released. Times are the holder's wall clock:
    other replicas never compare them with their own clocks (see the elector's docstring).
    """

    holder_identity: str
    lease_duration_seconds: int
    acquire_time: datetime | None
    renew_time: datetime | None
    leader_transitions: int = 0


class ResourceLock(Protocol):
    """A compare-and-swap store for one :class:`LeaderElectionRecord`."""

    def get(self) -> LeaderElectionRecord:
        """Read the current record; NotFound when there is none."""
        ...

    def create(self, record: LeaderElectionRecord) -> None:
        """Create the record; AlreadyExists when it exists."""
        ...

    def update(self, record: LeaderElectionRecord) -> None:
        """Replace the record last read/written by this lock; Conflict when it moved on."""
        ...

    def identity(self) -> str:
        """This candidate's identity (unique per replica)."""
        ...

    def describe(self) -> str:
        """A human-readable name for logs, e.g. ``namespace/name``."""
        ...
