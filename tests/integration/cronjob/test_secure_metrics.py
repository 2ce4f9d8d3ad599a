"""Secure /metrics against the real API server, and the metrics a user expects.

``python -m cronjob_controller`` runs with the manifests' ServiceAccount token (so the
controller's ClusterRole must allow the TokenReview and SubjectAccessReview it makes) and its
default ``--metrics-secure``. A ServiceAccount bound to manifests/base/metrics-reader.yaml's
ClusterRole scrapes 200 over HTTPS; one without the binding gets 403; no token gets 401. The
scrape then holds every metric the operator guide's Metrics section lists (docs/OPERATOR.md).
"""

from __future__ import annotations

import os
import re
import socket
import ssl
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pyctrl.testing.envtest import ControlPlane
from pyctrl.testing.envtest.process import Proc, spawn
from tests.integration.cronjob.env import wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
SYSTEM_NS = "pyctrl-system"
READER_ROLE = yaml.safe_load((ROOT / "manifests" / "base" / "metrics-reader.yaml").read_text())[
    "metadata"]["name"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, token: str | None = None) -> tuple[int, str]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the self-signed certificate the controller made
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5, context=ctx) as resp:
            return int(resp.status), resp.read().decode()
    except urllib.error.HTTPError as err:
        with err:  # closes its response (3.14 warns of one left open)
            return err.code, err.read().decode()


class Controller:
    def __init__(self, proc: Proc, metrics_port: int, probe_port: int) -> None:
        self.proc = proc
        self.metrics_url = f"https://127.0.0.1:{metrics_port}/metrics"
        self.readyz_url = f"http://127.0.0.1:{probe_port}/readyz"

    def ready(self) -> bool:
        assert self.proc.running(), self.proc.log_tail(40)
        try:
            with urllib.request.urlopen(self.readyz_url, timeout=2) as resp:
                return int(resp.status) == 200
        except OSError:
            return False


@pytest.fixture
def tokens(control_plane: ControlPlane, namespace: str) -> Iterator[dict[str, str]]:
    """Tokens of: the controller (manifest RBAC), a metrics reader, and an unbound SA."""
    if control_plane.external:
        pytest.skip("writes token kubeconfigs for an envtest control plane")
    for name in ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "metrics-reader.yaml"):
        control_plane.kubectl("apply", "-f", str(ROOT / "manifests" / "base" / name))
    binding = f"metrics-reader-{namespace}"
    for sa in ("scraper", "nosy"):
        control_plane.kubectl("create", "serviceaccount", sa, "-n", namespace)
    control_plane.kubectl("create", "clusterrolebinding", binding,
                          f"--clusterrole={READER_ROLE}", f"--serviceaccount={namespace}:scraper")

    def token(sa: str, ns: str) -> str:
        out = control_plane.kubectl("create", "token", sa, "-n", ns, "--duration=1h")
        return str(out.stdout).strip()

    try:
        yield {"controller": token("cronjob-controller", SYSTEM_NS),
               "scraper": token("scraper", namespace), "nosy": token("nosy", namespace)}
    finally:
        control_plane.kubectl("delete", "clusterrolebinding", binding, check=False)


@pytest.fixture
def controller(control_plane: ControlPlane, tokens: dict[str, str], namespace: str,
               tmp_path: Path) -> Iterator[Controller]:
    kubeconfig = control_plane.write_token_kubeconfig(tokens["controller"],
                                                      tmp_path / "sa.kubeconfig")
    metrics_port, probe_port = _free_port(), _free_port()
    argv = [sys.executable, "-m", "cronjob_controller", "--kubeconfig", str(kubeconfig),
            "--namespace", namespace, "--workers", "2", "--leader-elect",
            "--leader-elect-namespace", SYSTEM_NS,
            "--leader-elect-name", f"metrics-{uuid.uuid4().hex[:8]}",
            "--metrics-bind-address", f"127.0.0.1:{metrics_port}",
            "--health-probe-bind-address", f"127.0.0.1:{probe_port}",
            "--graceful-shutdown-timeout", "2s", "--log-format", "json"]
    proc = spawn("controller", argv, tmp_path / "controller.log",
                 env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        ctl = Controller(proc, metrics_port, probe_port)
        wait_for(ctl.ready, timeout=60, what="controller /readyz")
        yield ctl
    finally:
        proc.stop(timeout=15)
    assert proc.popen.returncode == 0, proc.log_tail(40)


def test_metrics_need_a_token_allowed_by_the_metrics_reader_role(
    controller: Controller, tokens: dict[str, str],
) -> None:
    assert _get(controller.metrics_url)[0] == 401
    assert _get(controller.metrics_url, "not-a-token")[0] == 401
    code, body = _get(controller.metrics_url, tokens["nosy"])
    assert code == 403 and "nosy" in body
    code, body = _get(controller.metrics_url, tokens["scraper"])
    assert code == 200 and "controller_runtime_reconcile_total" in body


def _readme_metric_names() -> set[str]:
    text = (ROOT / "docs" / "OPERATOR.md").read_text()
    section = text.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        first_cell = line.split("|")[1]
        names.update(re.sub(r"\{.*", "", n) for n in re.findall(r"`([^`]+)`", first_cell))
    return names


def test_every_metric_the_readme_lists_is_exported(
    controller: Controller, tokens: dict[str, str],
) -> None:
    expected = _readme_metric_names()
    assert {"rest_client_requests_total", "process_cpu_seconds_total",
            "cronjob_controller_cronjob_job_creation_skew_duration_seconds"} <= expected
    wait_for(lambda: "leader_election_master_status" in
             _get(controller.metrics_url, tokens["scraper"])[1], what="leading")
    code, body = _get(controller.metrics_url, tokens["scraper"])
    assert code == 200
    exported = set(re.findall(r"^# TYPE (\S+) ", body, re.MULTILINE))
    exported |= set(re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)", body, re.MULTILINE))
    assert sorted(expected - exported) == []
