"""A Manager with one example's controllers, for one test (run it with tests/threads.py)."""

from __future__ import annotations

from collections.abc import Callable

from pyctrl import HealthOptions, Manager, ManagerOptions
from pyctrl.kube.interface import Client


def example_manager(client: Client, namespace: str, setup: Callable[[Manager], object]) -> Manager:
    """``setup``'s controllers on a Manager scoped to ``namespace``, with a probe server."""
    mgr = Manager(client, ManagerOptions(namespace=namespace,
                                         health=HealthOptions(bind_address="127.0.0.1:0"),
                                         graceful_shutdown_timeout=10))
    setup(mgr)
    return mgr
