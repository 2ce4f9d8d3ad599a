"""Deprecated: moved to :mod:`pyctrl.serving.metrics`; this alias goes away in the next release."""

import warnings

from pyctrl.serving.metrics import (
    PerRegistry,
    per_registry,
)

__all__ = ["PerRegistry", "per_registry"]

warnings.warn("pyctrl.metrics moved to pyctrl.serving.metrics", DeprecationWarning, stacklevel=2)
