"""Deprecated: moved to :mod:`pyctrl.serving.gcmetrics` (this alias goes in the next release)."""

import warnings

from pyctrl.serving.gcmetrics import (
    GC_PAUSE_BUCKETS,
    gc_pause_histogram,
    live_sinks,
)

__all__ = ["GC_PAUSE_BUCKETS", "gc_pause_histogram", "live_sinks"]

warnings.warn(f"{__name__} moved to pyctrl.serving.gcmetrics", DeprecationWarning, stacklevel=2)
