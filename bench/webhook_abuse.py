"""Webhook under abuse: valid AdmissionReviews while idle and slowloris clients hold sockets.

Scenario (issue 25 item 1), on loopback with TLS, one server kind at a time, each in its own
process (see :mod:`bench.webhook_abuse_peers`): ``pyctrl`` (the project's WebhookServer),
``aiohttp`` and ``uvicorn`` serve the CronJob validating handler.

1. quiet: ``--quiet-requests`` valid reviews one after the other (a new TLS connection each;
   with ``--keep-alive`` one connection reused while the server keeps it, as the API
   server's Go client does, ``connections`` counting those opened); reported
   ``quiet.cpu_ms_per_request`` (the server process's user+sys CPU from /proc, per request)
   and latency percentiles.
2. abuse: an attacker process opens ``--idle`` connections that never send a byte and
   ``--slowloris`` clients sending one byte a second (half inside the TLS ClientHello, half in
   the request head after a handshake), spread over ``--addresses`` source addresses
   (127.0.0.2...; ``--addresses 0``: 127.0.0.1, the valid client's own address), reopening
   whatever the server closes. Once all are open, the client sends
   valid reviews at ``--rate`` per second for ``--seconds``; reported: ``failures`` (an error
   or a status other than 200, each request with a ``--timeout`` s budget), latency p50/p99/max,
   the server's CPU per valid request during the attack (attack handling included), its RSS
   growth per attacking connection, and the attacker's counters (connections reopened after
   the server closed them, connect errors).

Run (needs a quiet machine for the latency and CPU figures):
``python -m bench webhook-abuse [--servers pyctrl,aiohttp,uvicorn] [--json]``; for an older
pyctrl server, ``--pyctrl-root`` points at a checkout of it (a ``git worktree``).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import resource
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from pyctrl.testing.abuse import Attacker, raise_open_file_limit
from pyctrl.webhook import generate_certs

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("pyctrl", "aiohttp", "uvicorn")
PATH = "/validate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--servers", default=",".join(KINDS), help="comma-separated kinds")
    parser.add_argument("--idle", type=int, default=1000, help="idle connections")
    parser.add_argument("--slowloris", type=int, default=500, help="slowloris clients")
    parser.add_argument("--addresses", type=int, default=16,
                        help="source addresses the attack is spread over (0: the valid "
                             "client's own address, 127.0.0.1)")
    parser.add_argument("--seconds", type=float, default=20.0, help="valid traffic under attack")
    parser.add_argument("--rate", type=float, default=50.0, help="valid reviews per second")
    parser.add_argument("--quiet-requests", type=int, default=500, help="reviews without attack")
    parser.add_argument("--timeout", type=float, default=5.0, help="budget per valid review")
    parser.add_argument("--keep-alive", action="store_true",
                        help="valid reviews reuse their connection while the server keeps it")
    parser.add_argument("--pyctrl-root", default=str(ROOT),
                        help="the tree whose pyctrl serves as kind 'pyctrl'")


def review_body(uid: str) -> bytes:
    cronjob = {"apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
               "metadata": {"name": "c", "namespace": "default"},
               "spec": {"schedule": "*/5 * * * *", "concurrencyPolicy": "Allow",
                        "jobTemplate": {"spec": {"template": {"spec": {
                            "restartPolicy": "OnFailure",
                            "containers": [{"name": "c", "image": "busybox"}]}}}}}}
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": uid, "operation": "CREATE", "object": cronjob,
                                   "kind": {"group": "batch.pyctrl.io", "version": "v1",
                                            "kind": "CronJob"}}}).encode()


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _proc_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Client:
    """Valid reviews, verifying the server certificate: one TLS connection each, or with
    ``keep_alive`` one reused while the server keeps it (a new one after it closed)."""

    def __init__(self, port: int, ca_file: Path, timeout: float,
                 keep_alive: bool = False) -> None:
        self.port = port
        self.context = ssl.create_default_context(cafile=str(ca_file))
        self.timeout = timeout
        self.keep_alive = keep_alive
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self.connections = 0
        self._n = 0
        self._conn: http.client.HTTPSConnection | None = None

    def send(self) -> None:
        self._n += 1
        body = review_body(f"uid-{self._n}")
        begin = time.monotonic()
        conn = self._conn
        self._conn = None
        if conn is None:
            conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context,
                                               timeout=self.timeout)
            self.connections += 1
        try:
            conn.request("POST", PATH, body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            answer = resp.read()
            if resp.status != 200 or b'"allowed":true' not in answer.replace(b" ", b""):
                self.failures.append(f"status {resp.status}: {answer[:100]!r}")
                return
            if self.keep_alive and not resp.will_close:
                self._conn, conn = conn, None
        except (OSError, http.client.HTTPException) as err:
            self.failures.append(f"{type(err).__name__}: {err}")
            return
        finally:
            if conn is not None:
                conn.close()
        self.latencies.append(time.monotonic() - begin)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def summary(self) -> dict[str, object]:
        ms = [x * 1000 for x in self.latencies]
        return {"requests": len(self.latencies) + len(self.failures),
                "connections": self.connections,
                "failures": len(self.failures), "first_failures": self.failures[:3],
                "p50_ms": _percentile(ms, 0.50), "p99_ms": _percentile(ms, 0.99),
                "max_ms": max(ms, default=float("nan"))}


def _spawn_server(kind: str, cert_dir: Path, port: int, root: str) -> subprocess.Popen[str]:
    # A script, not -m: sys.path[0] is then bench/, and PYTHONPATH picks the pyctrl.
    return subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "webhook_abuse_peers.py"), kind, str(cert_dir),
         str(port)], cwd=root, env={**os.environ, "PYTHONPATH": os.pathsep.join(
             [root, str(ROOT)])}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _await_line(proc: subprocess.Popen[str], want: str) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if line != want:
        raise RuntimeError(f"expected {want!r} from {proc.args!r}, got {line!r}")


def _stop(proc: subprocess.Popen[str]) -> str:
    stdin: IO[str] | None = proc.stdin
    assert stdin is not None
    stdin.close()
    out = proc.stdout.read() if proc.stdout is not None else ""
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return out


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_one(kind: str, args: argparse.Namespace, cert_dir: Path, ca_file: Path) -> dict[str, Any]:
    port = _free_port()
    root = args.pyctrl_root if kind == "pyctrl" else str(ROOT)
    server = _spawn_server(kind, cert_dir, port, root)
    result: dict[str, Any] = {}
    try:
        _await_line(server, "ready")
        client = Client(port, ca_file, args.timeout)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # warm-up (uvicorn says ready before binding)
            client.send()
            if len(client.latencies) >= 20:
                break
            time.sleep(0.05)
        quiet = Client(port, ca_file, args.timeout, args.keep_alive)
        cpu0 = _proc_cpu(server.pid)
        for _ in range(args.quiet_requests):
            quiet.send()
        cpu_quiet = _proc_cpu(server.pid) - cpu0
        quiet.close()
        rss_quiet = _proc_rss_kib(server.pid)

        attacker = Attacker(port, idle=args.idle, slowloris=args.slowloris,
                            addresses=args.addresses).__enter__()
        try:
            rss_attack = _proc_rss_kib(server.pid)
            abused = Client(port, ca_file, args.timeout, args.keep_alive)
            cpu0 = _proc_cpu(server.pid)
            begin = time.monotonic()
            n = int(args.seconds * args.rate)
            for i in range(n):
                delay = begin + i / args.rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                abused.send()
            cpu_abuse = _proc_cpu(server.pid) - cpu0
            wall = time.monotonic() - begin
            abused.close()
        finally:
            counters = attacker.stop()
        attackers = max(1, args.idle + args.slowloris)
        result.update({
            "quiet": {**quiet.summary(),
                      "cpu_ms_per_request": 1000 * cpu_quiet / max(1, args.quiet_requests)},
            "abuse": {**abused.summary(),
                      "server_cpu_ms_per_request": 1000 * cpu_abuse / max(1, n),
                      "server_cpu_percent": 100 * cpu_abuse / wall,
                      "rss_kib_per_attacking_connection": (rss_attack - rss_quiet) / attackers,
                      "attacker": counters},
        })
    finally:
        out = _stop(server).strip().splitlines()
        if kind == "pyctrl" and out:
            with contextlib.suppress(ValueError):
                result["server_counters"] = json.loads(out[-1])
    return result


def run(args: argparse.Namespace) -> dict[str, object]:
    soft, hard = raise_open_file_limit()  # the children inherit it
    result: dict[str, object] = {"idle": args.idle, "slowloris": args.slowloris,
                                 "rate_per_s": args.rate, "seconds": args.seconds,
                                 "keep_alive": args.keep_alive}
    with tempfile.TemporaryDirectory() as tmp:
        certs = generate_certs(Path(tmp) / "certs", ["localhost"], ["127.0.0.1"])
        for kind in args.servers.split(","):
            result[kind] = run_one(kind, args, certs.cert_file.parent, certs.ca_file)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return result
