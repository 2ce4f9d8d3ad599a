"""Deprecated: moved to :mod:`pyctrl.serving`; this alias goes away in the next release."""

import warnings

from pyctrl.serving import (
    SUBJECT_ACCESS_REVIEWS,
    TOKEN_REVIEWS,
    MetricsAuth,
    serving_context,
)

__all__ = ["SUBJECT_ACCESS_REVIEWS", "TOKEN_REVIEWS", "MetricsAuth", "serving_context"]

warnings.warn("pyctrl.metrics_auth moved to pyctrl.serving", DeprecationWarning, stacklevel=2)
