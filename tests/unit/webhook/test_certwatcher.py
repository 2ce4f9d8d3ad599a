"""Issue 12 item 5: the serving certificate is reloaded from its directory without a restart;
a half-written pair is ignored until it is valid; secret-volume symlink swaps count."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from pyctrl.testing.fake_clock import FakeClock
from pyctrl.webhook import CertificateError, CertWatcher
from tests.unit.webhook.helpers import Start, der, install, new_certs, presented_cert, request
from tests.waiting import eventually


def test_rotated_files_are_presented_on_the_next_handshake(start: Start,
                                                           tmp_path: Path) -> None:
    cert_dir = tmp_path / "certs"
    old = der(new_certs(cert_dir).cert_file)
    clock = FakeClock()
    server = start(cert_dir, clock=clock, cert_poll_seconds=1.0)
    assert presented_cert(server.port) == old
    new = new_certs(tmp_path / "renewed")  # a new CA too, as a self-signed issuer rotates
    install(new.cert_file.parent, cert_dir)
    assert presented_cert(server.port) == old, "not before the next poll"
    assert clock.wait_for_waiters(1)
    clock.step(1.0)
    eventually(lambda: server.certs.reloads == 1, what="reload on the next poll")
    assert presented_cert(server.port) == der(new.cert_file)
    assert request(server.port, new.ca_file, "GET", "/healthz") == (200, b"ok")
    assert server.check() is None


def test_half_written_pair_keeps_the_old_certificate_until_valid(start: Start,
                                                                 tmp_path: Path) -> None:
    cert_dir = tmp_path / "certs"
    old = der(new_certs(cert_dir).cert_file)
    server = start(cert_dir)
    new = new_certs(tmp_path / "renewed")
    install(new.cert_file.parent, cert_dir, ("tls.crt",))  # the key is not there yet
    assert server.certs.poll() is False
    assert presented_cert(server.port) == old
    assert server.certs.poll() is False, "an unchanged broken pair is not retried"
    install(new.cert_file.parent, cert_dir, ("tls.key",))
    assert server.certs.poll() is True
    assert presented_cert(server.port) == der(new.cert_file)


def _secret_volume(cert_dir: Path, source: Path, version: str) -> None:
    """Write ``source``'s pair the way the kubelet updates a secret volume: a new timestamped
    directory, ``..data`` re-pointed to it by an atomic rename, stable symlinks to ``..data``."""
    payload = cert_dir / f"..{version}"
    payload.mkdir(parents=True)
    for name in ("tls.crt", "tls.key"):
        shutil.copyfile(source / name, payload / name)
    tmp_link = cert_dir / "..data_tmp"
    tmp_link.symlink_to(payload.name)
    previous = os.readlink(cert_dir / "..data") if (cert_dir / "..data").is_symlink() else None
    os.replace(tmp_link, cert_dir / "..data")
    for name in ("tls.crt", "tls.key"):
        if not (cert_dir / name).is_symlink():
            (cert_dir / name).symlink_to(Path("..data") / name)
    if previous is not None:
        shutil.rmtree(cert_dir / previous)


def test_secret_volume_symlink_swap_is_picked_up(start: Start, tmp_path: Path) -> None:
    cert_dir = tmp_path / "volume"
    first = new_certs(tmp_path / "first")
    second = new_certs(tmp_path / "second")
    _secret_volume(cert_dir, first.cert_file.parent, "2026_01_01_00_00_00.1")
    server = start(cert_dir)
    assert presented_cert(server.port) == der(first.cert_file)
    _secret_volume(cert_dir, second.cert_file.parent, "2026_03_01_00_00_00.2")
    assert server.certs.poll() is True
    assert presented_cert(server.port) == der(second.cert_file)


def test_files_disappearing_after_start_keep_the_old_certificate(start: Start,
                                                                 tmp_path: Path) -> None:
    cert_dir = tmp_path / "certs"
    old = der(new_certs(cert_dir).cert_file)
    server = start(cert_dir)
    shutil.rmtree(cert_dir)
    assert server.certs.poll() is False
    assert presented_cert(server.port) == old
    assert server.check() is None
    new = new_certs(cert_dir)
    assert server.certs.poll() is True
    assert presented_cert(server.port) == der(new.cert_file)


def test_load_errors_name_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(CertificateError, match=re.escape(f"directory {missing} does not exist")):
        CertWatcher(missing / "tls.crt", missing / "tls.key").load()
    certs = new_certs(tmp_path / "certs")
    absent = tmp_path / "certs" / "other.key"
    with pytest.raises(CertificateError, match=re.escape(f"cannot read {absent}")):
        CertWatcher(certs.cert_file, absent).load()
    other = new_certs(tmp_path / "other")
    watcher = CertWatcher(certs.cert_file, other.key_file)
    with pytest.raises(CertificateError, match="not a usable certificate and key") as err:
        watcher.load()
    assert str(certs.cert_file) in str(err.value) and str(other.key_file) in str(err.value)
    assert not watcher.loaded
    with pytest.raises(RuntimeError, match="no certificate loaded"):
        watcher.context()


def test_interval_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        CertWatcher(tmp_path / "a", tmp_path / "b", interval=0)
