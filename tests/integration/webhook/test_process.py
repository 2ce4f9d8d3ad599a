"""Issue 12 items 6 and 7 on the real process: ``python -m cronjob_controller`` with the
webhook on serves it as a Manager runnable, reports it in ``/readyz``, and exits promptly on
SIGTERM while slow clients hold webhook connections (it took 64 s before)."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyctrl.testing.envtest import ControlPlane
from pyctrl.testing.envtest.ports import free_port
from pyctrl.webhook import generate_certs
from tests.waiting import poll

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        with err:  # closes its response (3.14 warns of one left open)
            return err.code, err.read().decode()
    except OSError as err:
        return 0, str(err)


@pytest.fixture
def controller(control_plane: ControlPlane, tmp_path: Path
               ) -> Iterator[tuple[subprocess.Popen[str], int, int, Path]]:
    if control_plane.external:
        pytest.skip("runs the controller process next to a local control plane")
    certs = generate_certs(tmp_path / "certs", ["localhost"], ["127.0.0.1"])
    webhook_port, probe_port = free_port(), free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cronjob_controller", "--kubeconfig",
         str(control_plane.kubeconfig_path), "--webhook-bind-address",
         f"127.0.0.1:{webhook_port}", "--webhook-cert-dir", str(certs.cert_file.parent),
         "--health-probe-bind-address", f"127.0.0.1:{probe_port}",
         "--metrics-bind-address", "0", "--workers", "2", "--log-level", "warning"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        yield proc, webhook_port, probe_port, certs.ca_file
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def test_readyz_includes_the_webhook_and_sigterm_is_prompt_with_slow_clients(
        controller: tuple[subprocess.Popen[str], int, int, Path]) -> None:
    proc, webhook_port, probe_port, ca_file = controller
    assert poll(lambda: _get(probe_port, "/readyz")[0] == 200, timeout=60), proc.poll()
    assert _get(probe_port, "/readyz/webhook") == (200, "ok")
    body = _get(probe_port, "/readyz?verbose")[1]
    assert "[+]webhook ok" in body

    # Three slow clients: one silent before TLS, two mid-request after the handshake.
    context = ssl.create_default_context(cafile=str(ca_file))
    silent = socket.create_connection(("127.0.0.1", webhook_port), timeout=5)
    slow = [context.wrap_socket(socket.create_connection(("127.0.0.1", webhook_port),
                                                         timeout=5),
                                server_hostname="127.0.0.1") for _ in range(2)]
    slow[0].sendall(b"POST /validate-batch-pyctrl-io-v1-cronjob HTTP/1.1\r\nHost: x\r\n")
    slow[1].sendall(b"POST /validate-batch-pyctrl-io-v1-cronjob HTTP/1.1\r\n"
                    b"Content-Length: 5000\r\n\r\n{")
    try:
        begin = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        elapsed = time.monotonic() - begin
    finally:
        for sock in (silent, *slow):
            sock.close()
    assert proc.returncode == 0
    assert elapsed < 5.0, f"stopped after {elapsed:.1f}s"
