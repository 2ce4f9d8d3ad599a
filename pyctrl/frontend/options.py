"""FrontendOptions: where a :class:`~pyctrl.frontend.Frontend` listens and its bounds.

Contract: immutable and valid once built (``__post_init__`` raises ValueError naming the
field). What each bound means is in :mod:`pyctrl.frontend.server` (the caps, deadlines and
keep-alive of the server) and :mod:`pyctrl.frontend.connection` (per connection).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FrontendOptions"]

_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class FrontendOptions:
    """Where to listen and the bounds (see the module docstring). ``port=0`` picks a port."""

    host: str = "0.0.0.0"
    port: int = 0
    backlog: int = 1024
    max_connections: int = 4096
    max_connections_per_peer: int = 512
    header_timeout_seconds: float = 5.0
    request_timeout_seconds: float = 10.0
    max_header_bytes: int = 64 * 1024
    max_body_bytes: int = _MIB
    workers: int = 4
    shutdown_timeout_seconds: float = 3.0
    # Longer than the 90 s after which Go's HTTP client (the API server's) closes an idle
    # connection itself: the client closes first, so it never sends a request on a
    # connection the server is closing (a POST is not retried then).
    idle_timeout_seconds: float = 120.0
    max_requests_per_connection: int = 1000

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {self.port}")
        if self.idle_timeout_seconds < 0:
            raise ValueError("idle_timeout_seconds must be >= 0 (0: no keep-alive)")
        for name in ("header_timeout_seconds", "request_timeout_seconds",
                     "shutdown_timeout_seconds"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        for name in ("backlog", "max_connections", "max_connections_per_peer",
                     "max_header_bytes", "max_body_bytes", "workers",
                     "max_requests_per_connection"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
