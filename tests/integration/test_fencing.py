"""A deposed leader writes nothing: SIGSTOP the leader in a tick's burst, SIGCONT after failover.

Two ``python -m cronjob_controller --leader-elect`` replicas (lease 4 s, renew deadline 3 s,
retry 0.5 s), each authenticated with the token of its own ServiceAccount so the
kube-apiserver audit log (Metadata level for create/update/patch/delete/deletecollection)
tells their requests apart, share a namespace of ``* * * * *`` CronJobs (more than workers).

A validating admission webhook run by the test holds each of the leader's Job creates for two
seconds (only that user's, by ``matchConditions``), so at a minute tick T the leader's workers
send their creates within a few hundred milliseconds and then all wait for the answers. The
leader is frozen with SIGSTOP in that quiet part of the burst (1 s after the webhook saw its
first create for T): reconciles are in flight and keys are still queued, but no write is
between its fence check and its socket write (a SIGSTOP there would send that one request on
resume: no client-side fence can prevent it). It stays frozen until the standby holds the
Lease and has created T's Jobs, then gets SIGCONT.

Asserted from the audit log: the frozen replica's user made mutating requests before the
freeze (the log does attribute them) and none received after the resume; the resumed replica
exits (leadership lost); the standby created a Job for T of every CronJob.

Without the write fence the resumed replica, handed its create answers 5 s late, goes on
writing from its stale cache: the events of those creates (drained at shutdown), status
writes, the creates of the keys still queued. With it, every such write is refused before it
is sent. (Freezing *before* the tick is not enough to tell: on resume the elector's watchdog
usually stops the workers before they start T's reconciles, fence or not.)

Real time: ~20 s plus the wait for the next minute tick at least 5 s away (0-60 s).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import ssl
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cronjob_controller.api import CRONJOBS
from pyctrl.errors import NotFound
from pyctrl.kube import JOBS, LEASES, RESTClient, parse_micro_time
from pyctrl.testing.envtest import ControlPlane
from pyctrl.testing.envtest.kubeconfig import write_kubeconfig
from pyctrl.testing.envtest.process import Proc, spawn
from tests.integration.controller_procs import logged_identity
from tests.integration.cronjob.env import cronjob_body, minute_floor, wait_for
from tests.waiting import pause_until, poll

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[2]
LEASE_NAME = "pyctrl-cronjob-controller"
CRONJOB_COUNT = 24
WORKERS = 16  # fewer than CronJobs: some keys are still queued when the leader freezes
WEBHOOK_DELAY = 2.0  # seconds the API server waits on admission of the leader's Job creates
LEASE_DURATION = 4.0
ELECTION_FLAGS = ["--leader-elect-lease-duration", str(LEASE_DURATION),
                  "--leader-elect-renew-deadline", "3", "--leader-elect-retry-period", "0.5"]
MUTATING = {"create", "update", "patch", "delete", "deletecollection"}
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
  - level: None
"""


@dataclass
class AuditedPlane:
    plane: ControlPlane
    audit_log: Path


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuditedPlane]:
    """A control plane of our own whose kube-apiserver writes an audit log."""
    directory = tmp_path_factory.mktemp("audit")
    policy = directory / "policy.yaml"
    policy.write_text(AUDIT_POLICY)
    audit_log = directory / "audit.log"
    plane = ControlPlane(crd_dirs=[ROOT / "crds"], apiserver_args=[
        f"--audit-policy-file={policy}", f"--audit-log-path={audit_log}",
        "--audit-log-mode=blocking", "--audit-log-format=json"])
    if plane.external:
        pytest.skip("needs the audit log of a kube-apiserver we start")
    with plane:
        yield AuditedPlane(plane, audit_log)


@pytest.fixture(scope="module")
def admin(audited: AuditedPlane) -> Iterator[RESTClient]:
    client = RESTClient.from_kubeconfig(audited.plane.kubeconfig_path, qps=500, burst=1000)
    try:
        yield client
    finally:
        client.close()


def _audit_entries(path: Path) -> list[dict[str, Any]]:
    entries = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line being written
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def _received(entry: dict[str, Any]) -> datetime:
    raw = str(entry["requestReceivedTimestamp"]).replace("Z", "+00:00")
    return datetime.fromisoformat(raw).astimezone(UTC)


def _describe(entry: dict[str, Any]) -> str:
    ref = entry.get("objectRef") or {}
    code = (entry.get("responseStatus") or {}).get("code")
    return (f"{entry['requestReceivedTimestamp']} {entry['verb']} {ref.get('resource')}/"
            f"{ref.get('subresource') or ''} {ref.get('name') or ''} -> {code}")


class SlowWebhook:
    """A validating admission webhook (HTTPS, the API server's own serving certificate) that
    allows everything, after ``delay`` seconds for requests of ``slow_user``. It notes when
    the first request for an object whose name ends with ``watch_suffix`` arrived."""

    def __init__(self, plane: ControlPlane, slow_user: str, delay: float) -> None:
        self.slow_user = slow_user
        self.watch_suffix = "\0"
        self.first_arrival: datetime | None = None
        self._release = threading.Event()  # set on close: no request outlives the test
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = body["request"]
                name = str((request.get("object") or {}).get("metadata", {}).get("name", ""))
                if request["userInfo"]["username"] == hook.slow_user:
                    if name.endswith(hook.watch_suffix) and hook.first_arrival is None:
                        hook.first_arrival = datetime.now(UTC)
                    hook._release.wait(delay)
                answer = json.dumps({"apiVersion": "admission.k8s.io/v1",
                                     "kind": "AdmissionReview",
                                     "response": {"uid": request["uid"], "allowed": True}})
                data = answer.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                return

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(plane.pki.serving_cert, plane.pki.serving_key)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.1}, name="slow-webhook",
                                        daemon=True)
        self._thread.start()

    def configuration(self, name: str, namespace: str, ca_cert: Path) -> dict[str, Any]:
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{
                "name": "slow.fencing.pyctrl.io",
                "clientConfig": {"url": f"https://127.0.0.1:{self.port}/slow",
                                 "caBundle": base64.b64encode(ca_cert.read_bytes()).decode()},
                "rules": [{"apiGroups": ["batch"], "apiVersions": ["v1"],
                           "operations": ["CREATE"], "resources": ["jobs"]}],
                "namespaceSelector": {"matchLabels": {
                    "kubernetes.io/metadata.name": namespace}},
                "matchConditions": [{"name": "slow-user", "expression":
                                     f"request.userInfo.username == '{self.slow_user}'"}],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "failurePolicy": "Ignore",
                "timeoutSeconds": 10,
            }],
        }

    def close(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


class Replica:
    """One controller process running as its own ServiceAccount."""

    def __init__(self, audited: AuditedPlane, namespace: str, sa: str, log_dir: Path,
                 server: str | None = None) -> None:
        plane = audited.plane
        plane.kubectl("create", "serviceaccount", sa, "-n", namespace)
        binding = f"{namespace}-{sa}"
        plane.kubectl("create", "clusterrolebinding", binding, "--clusterrole=cluster-admin",
                      f"--serviceaccount={namespace}:{sa}")
        self.binding = binding
        token = plane.kubectl("create", "token", sa, "-n", namespace,
                              "--duration=1h").stdout.strip()
        kubeconfig = write_kubeconfig(log_dir / f"{sa}.kubeconfig", server=server or plane.server,
                                      ca_cert=plane.pki.ca_cert, token=token, user=sa)
        self.user = f"system:serviceaccount:{namespace}:{sa}"
        argv = [sys.executable, "-m", "cronjob_controller", "--kubeconfig", str(kubeconfig),
                "--namespace", namespace, "--workers", str(WORKERS), "--qps", "500",
                "--burst", "1000",
                "--leader-elect", "--leader-elect-namespace", namespace, *ELECTION_FLAGS,
                "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
                "--graceful-shutdown-timeout", "5", "--log-format", "json",
                "--log-level", "info"]
        self.proc: Proc = spawn(sa, argv, log_dir / f"{sa}.log",
                                env={**os.environ, "PYTHONPATH": str(ROOT)})

    def identity(self) -> str | None:
        return logged_identity(self.proc)

    def resume(self) -> None:
        """SIGCONT (also in teardown: a stopped process would ignore SIGTERM)."""
        if self.proc.running():
            os.kill(self.proc.pid, signal.SIGCONT)


def _holder(client: RESTClient, namespace: str) -> str | None:
    try:
        lease = client.get(LEASES, LEASE_NAME, namespace)
    except NotFound:
        return None
    return (lease.get("spec") or {}).get("holderIdentity")


def _renew_time(client: RESTClient, namespace: str) -> datetime | None:
    lease = client.get(LEASES, LEASE_NAME, namespace)
    return parse_micro_time((lease.get("spec") or {}).get("renewTime"))


def _jobs_for(client: RESTClient, namespace: str, tick: datetime) -> set[str]:
    suffix = f"-{int(tick.timestamp()) // 60}"
    return {j["metadata"]["name"] for j in client.list(JOBS, namespace)["items"]
            if j["metadata"]["name"].endswith(suffix)}


@pytest.fixture
def namespace(audited: AuditedPlane) -> Iterator[str]:
    name = f"fence-{uuid.uuid4().hex[:8]}"
    audited.plane.kubectl("create", "namespace", name)
    yield name
    audited.plane.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def replicas(audited: AuditedPlane, namespace: str, tmp_path: Path) -> Iterator[list[Replica]]:
    made: list[Replica] = []
    yield made
    for r in made:
        r.resume()
        r.proc.stop(timeout=20)
        audited.plane.kubectl("delete", "clusterrolebinding", r.binding, check=False)


def _user(entry: dict[str, Any]) -> str:
    return str((entry.get("user") or {}).get("username", ""))


def test_a_leader_frozen_past_its_lease_makes_no_write_after_it_resumes(
    audited: AuditedPlane, admin: RESTClient, namespace: str, replicas: list[Replica],
    tmp_path: Path,
) -> None:
    names = [f"fc-{i:02d}" for i in range(CRONJOB_COUNT)]
    for name in names:
        admin.create(CRONJOBS, cronjob_body(name), namespace)
    first = Replica(audited, namespace, "replica-a", tmp_path)
    replicas.append(first)
    hook = SlowWebhook(audited.plane, first.user, WEBHOOK_DELAY)
    webhook_config = tmp_path / "webhook.json"
    webhook_config.write_text(json.dumps(hook.configuration(
        f"slow-{namespace}", namespace, audited.plane.pki.ca_cert)))
    audited.plane.kubectl("apply", "-f", str(webhook_config))
    try:
        _freeze_during_a_tick_and_resume(audited, admin, namespace, replicas, first, hook,
                                         tmp_path)
    finally:
        audited.plane.kubectl("delete", "-f", str(webhook_config), check=False)
        hook.close()


def _freeze_during_a_tick_and_resume(
    audited: AuditedPlane, admin: RESTClient, namespace: str, replicas: list[Replica],
    first: Replica, hook: SlowWebhook, tmp_path: Path,
) -> None:
    first_id = wait_for(first.identity, timeout=60, what="replica-a to start")
    wait_for(lambda: _holder(admin, namespace) == first_id, timeout=30,
             what="replica-a to lead")
    second = Replica(audited, namespace, "replica-b", tmp_path)
    replicas.append(second)
    second_id = wait_for(second.identity, timeout=60, what="replica-b to start")

    now = datetime.now(UTC)
    tick = minute_floor(now) + timedelta(minutes=1)
    if (tick - now).total_seconds() < 5:
        tick += timedelta(minutes=1)
    hook.watch_suffix = f"-{int(tick.timestamp()) // 60}"
    pause_until(tick - timedelta(seconds=1))
    assert _holder(admin, namespace) == first_id, "replica-a still leads before the tick"
    burst = poll(lambda: hook.first_arrival, timeout=10, interval=0.01)
    assert burst is not None, f"replica-a started the tick's creates\n{first.proc.log_tail()}"
    # Its workers' creates all reach the API server within a few hundred ms and then wait
    # WEBHOOK_DELAY for admission: freeze the leader in that quiet part of the burst.
    pause_until(burst + timedelta(seconds=WEBHOOK_DELAY / 2))
    os.kill(first.proc.pid, signal.SIGSTOP)
    frozen_at = datetime.now(UTC)
    last_renew = _renew_time(admin, namespace)  # its last renewal (or an older one)
    try:
        # The standby takes over once the lease expired by its observation and does the tick.
        wait_for(lambda: _holder(admin, namespace) == second_id, timeout=30,
                 what="replica-b to take over")
        wait_for(lambda: len(_jobs_for(admin, namespace, tick)) == CRONJOB_COUNT, timeout=30,
                 what="replica-b to create the tick's Jobs")
        # The standby may take the Lease only a full lease duration after the last renewal
        # it could have observed (it retries right at that expiry: no more slack than that).
        acquired = parse_micro_time(
            admin.get(LEASES, LEASE_NAME, namespace)["spec"].get("acquireTime"))
        assert acquired is not None and last_renew is not None
        assert (acquired - last_renew).total_seconds() >= LEASE_DURATION, (acquired, last_renew)
    finally:
        resumed_at = datetime.now(UTC)
        first.resume()
    wait_for(lambda: not first.proc.running(), timeout=30,
             what="the deposed replica to exit after it resumes")
    assert first.proc.popen.returncode in (1, 3), first.proc.log_tail()  # leadership lost
    exited_at = datetime.now(UTC)
    # The log is written as requests complete: wait for one of the standby's lease renewals
    # received after the deposed replica exited, so everything before it is in the file.
    wait_for(lambda: any(_user(e) == second.user and _received(e) > exited_at
                         for e in _audit_entries(audited.audit_log)),
             timeout=20, what="the audit log to pass the deposed replica's exit")

    entries = [e for e in _audit_entries(audited.audit_log) if e.get("verb") in MUTATING]
    by_first = [e for e in entries if _user(e) == first.user]
    in_burst = [e for e in by_first if (e.get("objectRef") or {}).get("resource") == "jobs"
                and _received(e) < frozen_at]
    assert in_burst, "the audit log attributes replica-a's creates at the tick to its user"
    after_resume = [_describe(e) for e in by_first if _received(e) >= resumed_at]
    assert after_resume == [], (
        "the deposed leader wrote after it resumed:\n" + "\n".join(after_resume)
        + f"\n--- replica-a log\n{first.proc.log_tail(40)}")
    assert len(_jobs_for(admin, namespace, tick)) == CRONJOB_COUNT
