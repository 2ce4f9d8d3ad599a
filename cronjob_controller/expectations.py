"""Runs this process created (or saw) that a CronJob's status does not record yet.

Contract of :class:`RunRecord` (one per reconciler, thread-safe):

* :meth:`RunRecord.observe` notes that the run scheduled at ``t`` exists or existed for the
  CronJob with ``uid`` (this process created its Job, a sync saw it as an owned Job, or the
  informer delivered the final state of a deleted owned Job). Only the latest time per UID
  is kept: one entry per CronJob, so memory is O(CronJobs).
* :meth:`RunRecord.floor` is what the sync uses as a floor on ``lastScheduleTime``: the
  recorded time while the CronJob's cached status records an older one (or none). Once the
  cache shows ``lastScheduleTime >= t`` the entry is forgotten: the status is the record from
  then on. An entry of another UID under the same key (the CronJob was deleted and recreated)
  is dropped there too.
* :meth:`RunRecord.forget` drops a key's entry when the CronJob is gone.
* :meth:`RunRecord.created` notes a Job this process created; :meth:`RunRecord.unseen`
  returns its name while the Job cache has not shown it yet (the sync then waits for the
  cache: client-go's ControllerExpectations). :meth:`RunRecord.seen` (the Job is in the
  cache, or its deletion was delivered) clears it, and so does ``ttl`` seconds of real time
  (a Job created and deleted before the informer ever listed it is never delivered).

Why (created/unseen): a sync that acts on a Job cache older than its own last create would
not see that Job: a Replace would not delete it, a Forbid would start a second run.

Why (floor): a sync that created a Job defers its status write to the next sync (see
statuswrite.py). If the Job is deleted in between (``ttlSecondsAfterFinished: 0``, a user),
nothing in the cluster says the run happened; without this record the next sync would create
it again. The record lives in memory only; see CRONJOB.md for the restart window it leaves.

Contract of :class:`GoneJobs` (one per reconciler, thread-safe): the UIDs of a CronJob's Jobs
whose disappearance is explained (this process deleted them, the informer delivered the final
state of a finished one, or it was reported missing), so a Job a cached status lists active
after that is not reported ``MissingJob``. :meth:`GoneJobs.explained` only reads.
:meth:`GoneJobs.settle` forgets, per key, the UIDs a cached status no longer lists, and is
called only after a status write made from that cached copy succeeded (its resourceVersion
was the latest, so no newer status listing a noted Job exists; none is written later, as a
noted Job is finished or gone). A cached status that merely does not list a UID proves
nothing: it may predate the write that listed it (a CronJob informer lagging the Job
informer), and forgetting then gave a false ``MissingJob`` once the cache caught up. Memory:
per key, the Jobs gone since the CronJob's last successful status write, plus its active list.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Generic, TypeVar

from pyctrl.clock import Clock, RealClock

__all__ = ["GoneJobs", "PerKey", "RunRecord"]


class RunRecord:
    """Per CronJob UID, the latest scheduled time known to exist but maybe not in status."""

    def __init__(self, *, ttl: float = 30.0, clock: Clock | None = None) -> None:
        self._ttl = ttl
        self._clock: Clock = clock or RealClock()  # real time: a FakeClock's jumps would expire
        self._pending: dict[str, tuple[str, float]] = {}  # key -> (Job name, created at)
        self._lock = threading.Lock()
        self._by_uid: dict[str, tuple[str, datetime]] = {}  # uid -> (key, scheduled time)
        # key -> uids: a deleted-and-recreated CronJob's old Jobs may still be reported (GC)
        # while the new one has runs of its own; the sync of the key drops the stale UIDs.
        self._uids_of: dict[str, set[str]] = {}

    def observe(self, key: str, uid: str, scheduled: datetime) -> None:
        """Note that the run at ``scheduled`` of CronJob ``uid`` (at ``key``) exists."""
        if not uid:
            return
        with self._lock:
            current = self._by_uid.get(uid)
            if current is not None and current[1] >= scheduled:
                return
            self._by_uid[uid] = (key, scheduled)
            self._uids_of.setdefault(key, set()).add(uid)

    def floor(self, key: str, uid: str, recorded: datetime | None) -> datetime | None:
        """The recorded run of ``uid`` newer than ``recorded`` (the cached status), else None.

        Forgets the entry once ``recorded`` covers it.
        """
        with self._lock:
            uids = self._uids_of.get(key)
            if not uids:
                return None
            for stale in uids - {uid}:  # UIDs of CronJobs that used to live at this key
                self._by_uid.pop(stale, None)
            uids &= {uid}
            entry = self._by_uid.get(uid)
            if entry is not None and recorded is not None and recorded >= entry[1]:
                del self._by_uid[uid]
                entry = None
            if entry is None:
                del self._uids_of[key]
                return None
            return entry[1]

    def created(self, key: str, job: str) -> None:
        """This process created Job ``job`` for the CronJob at ``key``."""
        with self._lock:
            self._pending[key] = (job, self._clock.monotonic())

    def seen(self, key: str, job: str) -> None:
        """The Job cache showed ``job`` (or delivered its deletion)."""
        with self._lock:
            entry = self._pending.get(key)
            if entry is not None and entry[0] == job:
                del self._pending[key]

    def unseen(self, key: str, cached: set[str]) -> str | None:
        """The Job created for ``key`` that the cache (``cached`` names) does not show yet."""
        with self._lock:
            entry = self._pending.get(key)
            if entry is None:
                return None
            if entry[0] in cached or self._clock.monotonic() - entry[1] > self._ttl:
                del self._pending[key]
                return None
            return entry[0]

    def forget(self, key: str) -> None:
        """The CronJob at ``key`` is gone: drop its entry."""
        with self._lock:
            self._pending.pop(key, None)
            for uid in self._uids_of.pop(key, set()):
                self._by_uid.pop(uid, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_uid)


V = TypeVar("V")


class PerKey(Generic[V]):
    """A lock and one entry per CronJob key; :meth:`forget` drops a gone CronJob's entry."""

    def __init__(self) -> None:
        self._by_key: dict[str, V] = {}
        self._lock = threading.Lock()

    def forget(self, key: str) -> None:
        with self._lock:
            self._by_key.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_key)


class GoneJobs(PerKey[set[str]]):
    """Per CronJob key, UIDs of Jobs whose disappearance is explained (module docstring)."""

    def note(self, key: str, uid: str) -> None:
        """Job ``uid`` of the CronJob at ``key`` is gone, and not missing: we know why."""
        if not uid:
            return
        with self._lock:
            self._by_key.setdefault(key, set()).add(uid)

    def explained(self, key: str, listed: set[str]) -> set[str]:
        """The noted UIDs among ``listed`` (a cached status.active)."""
        with self._lock:
            return self._by_key.get(key, set()) & listed

    def settle(self, key: str, listed: set[str]) -> None:
        """A status write from a cached copy listing ``listed`` active succeeded: forget the
        noted UIDs it does not list (module docstring)."""
        with self._lock:
            noted = self._by_key.get(key)
            if noted is None:
                return
            noted &= listed
            if not noted:
                del self._by_key[key]
