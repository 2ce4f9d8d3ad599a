"""Events about CronJobs, each distinct problem reported once.

Contract of :class:`Reporter` (one per reconciler, thread-safe):

* :meth:`Reporter.event` records an Event now, its message cut to :data:`MAX_MESSAGE_LENGTH`
  (:func:`truncate`).
* :meth:`Reporter.once` records it only when the (key, reason) pair last reported a different
  message (or none): a CronJob that stays broken, or a run that stays skipped, gives one Event
  per distinct problem instead of one per sync. It returns whether it recorded.
* :meth:`Reporter.forget` drops what was reported for a key (all reasons, or all but
  ``keep``), so the same problem coming back later is reported again; the reconciler forgets
  a CronJob's entries when it is gone or valid again; :meth:`Reporter.drop` one reason's;
  :meth:`Reporter.reported` reads the last message of one.
  Memory is O(CronJobs x reasons).

Events go through the recorder, which never blocks a worker (the broadcaster's sink writes
them in the background).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from cronjob_controller.crd import CronJob
from pyctrl.record import EventRecorder, EventType

__all__ = ["MAX_MESSAGE_LENGTH", "Reporter", "truncate"]

# Condition and event messages are cut to this many characters (the CRD allows 32768 for a
# condition message; an apiserver error or a schedule echoed in a message can be longer).
MAX_MESSAGE_LENGTH = 1024


def truncate(message: str, limit: int = MAX_MESSAGE_LENGTH) -> str:
    """``message`` cut to ``limit`` characters, the cut marked with an ellipsis."""
    return message if len(message) <= limit else message[:limit - 1] + "\u2026"


class Reporter:
    """Events about CronJobs, optionally once per (key, reason, message) (module docstring)."""

    def __init__(self, recorder: EventRecorder) -> None:
        self.recorder = recorder
        # (key, reason) -> the last message reported for it.
        self._reported: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def event(self, obj: CronJob, type: EventType, reason: str, message: str) -> None:
        """Record an Event about ``obj`` now."""
        self.recorder.event(obj, type, reason, truncate(message))

    def once(self, key: str, obj: CronJob | dict[str, Any], type: EventType, reason: str,
             message: str) -> bool:
        """Record the Event unless ``key`` already reported this ``reason`` with this message."""
        message = truncate(message)
        with self._lock:
            if self._reported.get((key, reason)) == message:
                return False
            self._reported[(key, reason)] = message
        self.recorder.event(obj, type, reason, message)
        return True

    def reported(self, key: str, reason: str) -> str | None:
        """The message ``key`` last reported for ``reason`` (None: none)."""
        with self._lock:
            return self._reported.get((key, reason))

    def forget(self, key: str, keep: Sequence[str] = ()) -> None:
        """Forget what ``key`` reported, except the reasons in ``keep``."""
        with self._lock:
            for k in [k for k in self._reported if k[0] == key and k[1] not in keep]:
                del self._reported[k]

    def drop(self, key: str, reason: str) -> None:
        """Forget what ``key`` reported for ``reason`` (the problem is gone)."""
        with self._lock:
            self._reported.pop((key, reason), None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._reported)
