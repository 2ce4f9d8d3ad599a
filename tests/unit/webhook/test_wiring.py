"""Issue 12 item 6: the webhook as a Manager runnable in /readyz, and a missing or unusable
--webhook-cert-dir ending ``python -m cronjob_controller`` with status 2 naming the path."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from cronjob_controller.__main__ import _webhook, build_parser
from cronjob_controller.webhook import HANDLERS, VALIDATE_PATH
from pyctrl import HealthOptions, ManagerOptions
from pyctrl.manager import Manager
from pyctrl.testing.fake_client import FakeClient
from pyctrl.webhook import CertificatePaths, WebhookServer, WebhookServerOptions
from tests.threads import running_manager
from tests.unit.manager.helpers import http_get
from tests.unit.webhook.helpers import new_certs
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[3]


def _run_controller(tmp_path: Path, cert_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "no-kubeconfig"),
           "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "cronjob_controller", "--webhook-bind-address", "127.0.0.1:0",
         "--webhook-cert-dir", str(cert_dir), "--metrics-bind-address", "0",
         "--health-probe-bind-address", "0"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_missing_cert_dir_exits_2_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "not" / "there"
    result = _run_controller(tmp_path, missing)
    assert result.returncode == 2, result.stderr
    assert f"certificate directory {missing} does not exist" in result.stderr
    assert "Traceback" not in result.stderr


def test_mismatched_pair_exits_2_naming_the_files(tmp_path: Path) -> None:
    cert_dir = new_certs(tmp_path / "certs").cert_file.parent
    other = new_certs(tmp_path / "other")
    (cert_dir / "tls.key").write_bytes(other.key_file.read_bytes())
    result = _run_controller(tmp_path, cert_dir)
    assert result.returncode == 2, result.stderr
    assert str(cert_dir / "tls.crt") in result.stderr
    assert "not a usable certificate and key" in result.stderr


def test_cli_builds_the_cronjob_webhook_with_its_certificate_loaded(tmp_path: Path) -> None:
    certs = new_certs(tmp_path)
    args = build_parser().parse_args(["--webhook-bind-address", "127.0.0.1:0",
                                      "--webhook-cert-dir", str(tmp_path)])
    server = _webhook(args)
    assert server is not None and server.certs.loaded
    assert server.config.cert_file == certs.cert_file
    assert VALIDATE_PATH in HANDLERS
    assert _webhook(build_parser().parse_args([])) is None  # off by default


def _manager_with(server: WebhookServer) -> Manager:
    manager = Manager(FakeClient(),
                      ManagerOptions(health=HealthOptions(bind_address="127.0.0.1:0")))
    manager.add(server)
    manager.add_readyz_check("webhook", server.check)
    return manager


def test_readyz_includes_the_webhook_server(tmp_path: Path) -> None:
    certs: CertificatePaths = new_certs(tmp_path)
    server = WebhookServer(WebhookServerOptions(cert_dir=str(certs.cert_file.parent),
                                               host="127.0.0.1", port=0), HANDLERS)
    manager = _manager_with(server)
    assert server.check() == "webhook server is not listening"
    with running_manager(manager) as runner:
        eventually(lambda: http_get(manager, "/readyz")[0] == 200, what="ready")
        assert http_get(manager, "/readyz/webhook") == (200, "ok")
        assert http_get(manager, "/healthz") == (200, "ok")
    assert not runner.thread.is_alive()
    assert server.check() is not None


def test_a_webhook_that_can_not_bind_fails_readyz_and_healthz(tmp_path: Path) -> None:
    certs = new_certs(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = WebhookServer(WebhookServerOptions(
            cert_dir=str(certs.cert_file.parent), host="127.0.0.1",
            port=taken.getsockname()[1]), HANDLERS)
        manager = _manager_with(server)
        with running_manager(manager) as runner:
            eventually(lambda: http_get(manager, "/healthz")[0] == 500, what="healthz fails")
            code, body = http_get(manager, "/healthz?verbose")
            assert "[-]runnables failed: WebhookServer failed: OSError" in body
            code, body = http_get(manager, "/readyz?verbose")
            assert code == 500 and "[-]webhook failed: webhook server is not listening" in body
    assert not runner.thread.is_alive()
