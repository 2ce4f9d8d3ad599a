"""Job creates the API server refused as invalid, remembered so they are not retried in a loop.

Contract of :class:`RejectedCreates` (one per reconciler, thread-safe):

* :meth:`RejectedCreates.remember` notes that the Job for the run at ``due`` of the CronJob
  ``uid`` at ``generation`` was refused (422 Invalid) with ``message``. One entry per CronJob
  key: memory is O(CronJobs with a rejected template).
* :meth:`RejectedCreates.lookup` returns the message while the same CronJob (uid) at the same
  generation asks for the same run again: the same template gets the same answer, so the
  sync reports it instead of asking. Anything else (a spec edit bumps the generation, the
  next scheduled time, a recreated CronJob) drops the entry and returns None: ask again.
* :meth:`RejectedCreates.forget` drops the entry when the CronJob is gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cronjob_controller.expectations import PerKey

__all__ = ["RejectedCreate", "RejectedCreates"]


@dataclass(frozen=True, slots=True)
class RejectedCreate:
    """One refused create: which CronJob, spec generation and run, and the server's words."""

    uid: str
    generation: object  # metadata.generation as stored (an int; None on objects without one)
    due: datetime
    message: str


class RejectedCreates(PerKey[RejectedCreate]):
    """Per CronJob key, the last create the API server refused as invalid."""

    def remember(self, key: str, rejected: RejectedCreate) -> None:
        with self._lock:
            self._by_key[key] = rejected

    def lookup(self, key: str, uid: str, generation: object, due: datetime) -> str | None:
        """The refusal's message if this exact run of this spec was refused, else None."""
        with self._lock:
            entry = self._by_key.get(key)
            if entry is None:
                return None
            if (entry.uid, entry.generation, entry.due) != (uid, generation, due):
                del self._by_key[key]
                return None
            return entry.message
