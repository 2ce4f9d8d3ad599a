"""A self-signed CA and serving certificate for a webhook server (tests, local runs).

Contract: :func:`generate_certs` writes ``ca.crt``, ``tls.crt`` and ``tls.key`` (ECDSA P-256,
``tls.key`` mode 0600) into a directory: a fresh CA and a serving certificate it signed for
the given DNS names and IP addresses (server auth only). Each file is replaced atomically
(written beside it, then renamed), so a :class:`pyctrl.webhook.CertWatcher` never reads a
half-written file; the pair as a whole is not atomic, which the watcher tolerates (a key
that does not match its certificate is not loaded). In a cluster, cert-manager issues the
certificate instead (manifests/certificate.yaml).
"""

from __future__ import annotations

import base64
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pyctrl.clock import Clock, RealClock

__all__ = ["CertificatePaths", "generate_certs"]


@dataclass(frozen=True, slots=True)
class CertificatePaths:
    """Files written by :func:`generate_certs`."""

    ca_file: Path
    cert_file: Path
    key_file: Path

    def ca_bundle(self) -> str:
        """The CA certificate base64-encoded, for a webhook configuration's ``caBundle``."""
        return base64.b64encode(self.ca_file.read_bytes()).decode("ascii")


def _write(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _builder(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey,
             not_before: datetime, not_after: datetime) -> x509.CertificateBuilder:
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
            .public_key(public_key).serial_number(x509.random_serial_number())
            .not_valid_before(not_before).not_valid_after(not_after))


def generate_certs(
    directory: str | os.PathLike[str],
    dns_names: Sequence[str],
    ip_addresses: Sequence[str] = (),
    *,
    valid_days: int = 365,
    clock: Clock | None = None,
) -> CertificatePaths:
    """Create a self-signed CA and a serving certificate for ``dns_names``/``ip_addresses``."""
    if not dns_names and not ip_addresses:
        raise ValueError("at least one DNS name or IP address is required")
    now = (clock or RealClock()).now()
    not_before, not_after = now - timedelta(minutes=5), now + timedelta(days=valid_days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pyctrl-webhook-ca")])
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key(), not_before, not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(
        NameOID.COMMON_NAME, dns_names[0] if dns_names else ip_addresses[0])])
    alt_names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    alt_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    cert = (
        _builder(subject, ca_name, key.public_key(), not_before, not_after)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = CertificatePaths(out / "ca.crt", out / "tls.crt", out / "tls.key")
    pem = serialization.Encoding.PEM
    _write(paths.ca_file, ca_cert.public_bytes(pem), 0o644)
    _write(paths.cert_file, cert.public_bytes(pem), 0o644)
    _write(paths.key_file, key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()), 0o600)
    return paths
