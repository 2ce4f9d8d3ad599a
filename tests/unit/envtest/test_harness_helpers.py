"""Unit tests for envtest's helpers: ports, certificates, kubeconfig and process cleanup."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pyctrl.testing.envtest.certs import generate_pki
from pyctrl.testing.envtest.kubeconfig import write_kubeconfig
from pyctrl.testing.envtest.ports import free_port
from pyctrl.testing.envtest.process import pid_alive, reap_stale_dirs, spawn
from tests.waiting import poll


def test_free_port_is_bindable_and_never_repeats() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports[-1]))


def test_generate_pki_chains_and_usages(tmp_path: Path) -> None:
    pki = generate_pki(tmp_path)
    ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    serving = x509.load_pem_x509_certificate(pki.serving_cert.read_bytes())
    admin = x509.load_pem_x509_certificate(pki.admin_cert.read_bytes())
    serving.verify_directly_issued_by(ca)
    admin.verify_directly_issued_by(ca)
    sans = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    assert "127.0.0.1" in [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]
    orgs = admin.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    assert orgs[0].value == "system:masters"
    usage = admin.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.CLIENT_AUTH in usage
    assert oct(pki.admin_key.stat().st_mode & 0o777) == "0o600"
    # The serving pair loads into an SSL context, i.e. key and cert match.
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(pki.serving_cert), str(pki.serving_key))


def test_kubeconfig_embeds_credentials(tmp_path: Path) -> None:
    pki = generate_pki(tmp_path / "pki")
    path = write_kubeconfig(tmp_path / "kc", server="https://127.0.0.1:1", ca_cert=pki.ca_cert,
                            client_cert=pki.admin_cert, client_key=pki.admin_key)
    config = yaml.safe_load(path.read_text())
    assert config["current-context"] == "envtest"
    assert config["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:1"
    assert "client-key-data" in config["users"][0]["user"]


def test_spawned_process_stops_with_its_process_group(tmp_path: Path) -> None:
    # The child starts a grandchild; stop() must take down the whole group.
    script = (
        "import subprocess,sys,time;"
        "subprocess.Popen([sys.executable,'-c','import signal; signal.pause()']);"
        "import signal; signal.pause()"
    )
    proc = spawn("sleeper", [sys.executable, "-c", script], tmp_path / "log")
    try:
        def group() -> list[int]:
            out = subprocess.run(["pgrep", "-g", str(proc.pid)], check=False,
                                 capture_output=True, text=True)
            return [int(p) for p in out.stdout.split()]

        def with_grandchild() -> list[int] | None:
            found = group()
            return found if len(found) >= 2 else None

        # Wait (bounded) until the grandchild exists.
        pids = poll(with_grandchild, 5.0, 0.02) or group()
    finally:
        proc.stop(timeout=5)
    assert not proc.running()
    for pid in pids:
        # Zombies of the direct child are reaped by Popen.wait; the grandchild was killed.
        assert not pid_alive(pid) or _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True


def test_child_dies_when_spawning_thread_dies(tmp_path: Path) -> None:
    # A helper process spawns a long-lived child and is then SIGKILLed; PDEATHSIG must kill
    # the child too, which is what protects CI from orphaned etcd/apiserver processes.
    code = (
        "import sys; from pathlib import Path;"
        "from pyctrl.testing.envtest.process import spawn;"
        "p = spawn('c', [sys.executable, '-c', 'import signal; signal.pause()'],"
        f" Path({str(tmp_path / 'l')!r}));"
        "print(p.pid, flush=True); import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                         text=True, timeout=30)
    child = int(out.stdout.split()[0])
    poll(lambda: not pid_alive(child) or _is_zombie(child), 5.0, 0.02)
    assert not pid_alive(child) or _is_zombie(child)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pid probing")
def test_reap_stale_dirs_removes_only_dead_owners(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"pyctrl-envtest-{dead.pid}-abc"
    live = tmp_path / f"pyctrl-envtest-{os.getppid()}-def"
    mine = tmp_path / f"pyctrl-envtest-{os.getpid()}-ghi"
    for d in (stale, live, mine):
        d.mkdir()
    removed = reap_stale_dirs(tmp_path, "pyctrl-envtest-")
    assert removed == [stale]
    assert live.exists() and mine.exists() and not stale.exists()
