"""Free TCP ports on 127.0.0.1 for the processes envtest starts.

Contract: ``free_port()`` returns a port the kernel just reported free on 127.0.0.1 and that
this process has not handed out before (so two ControlPlanes in one process never get the same
port). Another process can still take it between allocation and use: callers that start a
server on it must treat "address in use" as retryable. ``port_open(port)`` says whether
something accepts connections on 127.0.0.1:port now (how envtest sees a server is up when its
health endpoint is not worth a TLS client).
"""

from __future__ import annotations

import socket
import threading

__all__ = ["free_port", "port_open"]

_lock = threading.Lock()
_handed_out: set[int] = set()


def free_port(host: str = "127.0.0.1") -> int:
    """Return a currently unused TCP port on ``host`` not handed out earlier by this process."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        with _lock:
            if port not in _handed_out:
                _handed_out.add(port)
                return port
    raise RuntimeError("could not find a free TCP port after 200 attempts")


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """True when a TCP connect to ``host:port`` succeeds within half a second."""
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0
