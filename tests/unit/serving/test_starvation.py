"""Issue 25 item 1 for the Manager's servers: 1000 idle connections to each of the probe
server (HTTP) and the secure metrics server (HTTPS + auth) cost no thread, and /healthz,
/readyz and an authorized /metrics are still answered (the thread-per-connection servers
would have needed a thread for every idle client)."""

from __future__ import annotations

import resource
import socket
import ssl
import threading
from collections.abc import Iterator

import pytest

from pyctrl.manager import HealthOptions, Manager, ManagerOptions, MetricsOptions
from pyctrl.serving import Response
from pyctrl.testing.abuse import raise_open_file_limit
from pyctrl.testing.fake_client import FakeClient
from pyctrl.testing.fake_clock import FakeClock
from tests.threads import start_manager
from tests.unit.manager.helpers import get_url as _get
from tests.waiting import eventually

IDLE = 1000
ADDRESSES = 8  # 125 per client address: under the per-client cap


def _auth(path: str, header: str | None) -> Response | None:
    return None if header == "Bearer good" else (401, "text/plain", b"unauthorized\n")


@pytest.fixture
def manager() -> Iterator[Manager]:
    limits = raise_open_file_limit()
    mgr = Manager(FakeClient(), ManagerOptions(
        metrics=MetricsOptions(bind_address="127.0.0.1:0", secure=True, auth=_auth),
        health=HealthOptions(bind_address="127.0.0.1:0")), clock=FakeClock())
    runner = start_manager(mgr)  # both addresses are published together
    try:
        yield mgr
    finally:
        runner.shutdown()
        resource.setrlimit(resource.RLIMIT_NOFILE, limits)


def test_idle_connections_cannot_starve_probes_or_metrics(manager: Manager) -> None:
    probes, metrics = manager.health_probe_address, manager.metrics_address
    assert probes is not None and metrics is not None
    eventually(lambda: _get(f"http://127.0.0.1:{probes[1]}/readyz")[0] == 200, what="ready")
    threads = threading.active_count()
    idle: list[socket.socket] = []
    try:
        for port in (probes[1], metrics[1]):
            idle += [socket.create_connection(
                ("127.0.0.1", port), timeout=5,
                source_address=(f"127.0.0.{2 + i % ADDRESSES}", 0)) for i in range(IDLE)]
        assert threading.active_count() == threads  # idle connections cost no thread
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE  # the self-signed certificate made at start
        for _ in range(3):
            assert _get(f"http://127.0.0.1:{probes[1]}/healthz") == (200, "ok")
            assert _get(f"http://127.0.0.1:{probes[1]}/readyz") == (200, "ok")
            code, body = _get(f"https://127.0.0.1:{metrics[1]}/metrics", "good", insecure)
            assert code == 200 and "process_cpu_seconds_total" in body
            assert _get(f"https://127.0.0.1:{metrics[1]}/metrics", "bad", insecure)[0] == 401
    finally:
        for sock in idle:
            sock.close()
