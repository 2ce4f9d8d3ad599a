"""Deprecated: moved to :mod:`pyctrl.serving`; this alias goes away in the next release."""

import warnings

from pyctrl.serving import (
    Authorizer,
    Check,
    Checks,
    HTTPServerThread,
    Response,
    metrics_handler,
    parse_bind_address,
)

__all__ = ["Authorizer", "Check", "Checks", "HTTPServerThread", "Response", "metrics_handler",
           "parse_bind_address"]

warnings.warn("pyctrl.healthz moved to pyctrl.serving", DeprecationWarning, stacklevel=2)
