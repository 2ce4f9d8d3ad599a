"""FakeRecorder: an :class:`pyctrl.record.EventRecorder` that keeps events in memory.

Contract: every ``event``/``eventf`` call is appended, in call order, both as a
``"<Type> <Reason> <message>"`` string to ``events`` (the shape client-go's FakeRecorder
produces, handy for ``assert "Warning ErrResourceExists ..." in rec.events``) and as a
:class:`RecordedEvent` to ``records``. Thread-safe; never blocks; never talks to a server.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from pyctrl.kube import meta
from pyctrl.record.broadcaster import EventType, Involved

__all__ = ["FakeRecorder", "RecordedEvent"]


@dataclass(frozen=True)
class RecordedEvent:
    """One recorded event: the involved object's key, type, reason and message."""

    key: str
    type: EventType
    reason: str
    message: str


class FakeRecorder:
    """Collects events for assertions (see module docstring)."""

    def __init__(self) -> None:
        self._mu = threading.Lock()
        self.events: list[str] = []
        self.records: list[RecordedEvent] = []

    def event(self, obj: Involved, type: EventType, reason: str, message: str) -> None:
        ns, name = meta.namespace(obj), meta.name(obj)
        key = f"{ns}/{name}" if ns else str(name)
        with self._mu:
            self.events.append(f"{type} {reason} {message}")
            self.records.append(RecordedEvent(key, type, reason, message))

    def eventf(
        self, obj: Involved, type: EventType, reason: str, message_fmt: str, *args: object
    ) -> None:
        self.event(obj, type, reason, message_fmt % args if args else message_fmt)
