"""Event recording (client-go's tools/record): non-blocking recorders, one sink thread,
aggregation, de-duplication and a per-object spam filter."""

from pyctrl.record.broadcaster import EventBroadcaster, EventRecorder, EventType
from pyctrl.record.correlator import COMBINED_PREFIX, CorrelateResult, EventCorrelator

__all__ = [
    "COMBINED_PREFIX",
    "CorrelateResult",
    "EventBroadcaster",
    "EventCorrelator",
    "EventRecorder",
    "EventType",
]
