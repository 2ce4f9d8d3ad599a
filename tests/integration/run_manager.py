"""A Manager with one example's controllers, running on a thread for one test."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyctrl import HealthOptions, Manager, ManagerOptions
from pyctrl.kube.interface import Client


@contextmanager
def running_manager(client: Client, namespace: str, setup: Callable[[Manager], object],
                    name: str) -> Iterator[Manager]:
    """``setup``'s controllers on a Manager scoped to ``namespace``, run until the block ends
    (the thread is joined)."""
    mgr = Manager(client, ManagerOptions(namespace=namespace,
                                         health=HealthOptions(bind_address="127.0.0.1:0"),
                                         graceful_shutdown_timeout=10))
    setup(mgr)
    stop = threading.Event()
    thread = threading.Thread(target=mgr.run, args=(stop,), name=name)
    thread.start()
    try:
        yield mgr
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
