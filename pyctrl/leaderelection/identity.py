"""The identity a replica campaigns (and holds Leases) under: one generator for every caller.

Contract: :func:`default_identity` returns ``<name>_<32 hex digits>``: ``name`` is the pod's
name (``$POD_NAME``, set through the downward API) or else the host name, so the Lease shows
which pod leads; the random suffix (a uuid4) makes it unique per process, so a restarted
container never mistakes its predecessor's Lease record for its own.
"""

from __future__ import annotations

import os
import socket
import uuid

__all__ = ["default_identity"]


def default_identity() -> str:
    """``<pod or host name>_<uuid4 hex>`` (see module docstring)."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex}"
