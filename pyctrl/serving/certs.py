"""Certificates for the servers pyctrl runs: one helper for the webhook, /metrics and envtest.

Contract: :func:`new_ca` and :func:`issue_cert` make a CA and leaf certificates in memory
(also used by envtest's control-plane PKI, so there is one certificate helper); they never
touch the disk. :func:`generate_certs` writes ``ca.crt``, ``tls.crt`` and ``tls.key`` (ECDSA P-256,
``tls.key`` mode 0600) into a directory: a fresh CA and a serving certificate it signed for
the given DNS names and IP addresses (server auth only). Each file is replaced atomically
(written beside it, then renamed), so a :class:`pyctrl.webhook.CertWatcher` never reads a
half-written file; the pair as a whole is not atomic, which the watcher tolerates (a key
that does not match its certificate is not loaded). In a cluster, cert-manager issues the
certificate instead (manifests/components/webhook/certificate.yaml).

:func:`self_signed_cert` is an in-memory serving certificate (ECDSA P-256, valid one year,
for ``localhost``/127.0.0.1 and the given names, signed by a throwaway CA whose key is
discarded). :func:`serving_context` builds a TLS 1.2+ server context: from
``tls.crt``/``tls.key`` in a cert dir (FileNotFoundError or ValueError naming the file when
missing or unusable), or, without one, from :func:`self_signed_cert`; the generated key
touches disk only inside a private temporary directory while the ssl module loads it.

Every certificate made here passes strict X.509 verification (OpenSSL's
``X509_V_FLAG_X509_STRICT``, which Python 3.13's default client context sets): Subject and
Authority Key Identifiers, critical key usage (certificate and CRL signing on the CA, digital
signature on leaves), critical basic constraints (CA:TRUE, path length 0, on the CA only) and,
on leaves, the extended key usage asked for.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from pyctrl.clock import Clock, RealClock

if TYPE_CHECKING:  # cryptography is imported where certificates are made (start-up time)
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

__all__ = ["CertificatePaths", "generate_certs", "issue_cert", "new_ca", "self_signed_cert",
           "serving_context"]


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


def _name(common_name: str, org: str | None = None) -> x509.Name:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _validity(days: int, clock: Clock | None) -> tuple[datetime, datetime]:
    now = (clock or RealClock()).now()
    return now - timedelta(minutes=5), now + timedelta(days=days)


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    """A CA signs certificates and CRLs; an ECDSA leaf only signs handshakes."""
    from cryptography import x509
    return x509.KeyUsage(
        digital_signature=True, key_cert_sign=ca, crl_sign=ca, content_commitment=False,
        key_encipherment=False, data_encipherment=False, key_agreement=False,
        encipher_only=False, decipher_only=False)


def _authority_key_id(ca_cert: x509.Certificate) -> x509.AuthorityKeyIdentifier:
    """The issuer's Subject Key Identifier, or one derived from its key when it has none."""
    from cryptography import x509
    try:
        ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    except x509.ExtensionNotFound:
        return x509.AuthorityKeyIdentifier.from_issuer_public_key(
            ca_cert.public_key())  # type: ignore[arg-type]
    return x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski)


def new_ca(common_name: str = "pyctrl-webhook-ca", *, days: int = 365,
           clock: Clock | None = None) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A self-signed CA (ECDSA P-256) that may sign leaf certificates only."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    not_before, not_after = _validity(days, clock)
    name = _name(common_name)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(not_before).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                       critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()),
                       critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def issue_cert(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    *,
    common_name: str,
    org: str | None = None,
    dns_names: Sequence[str] = (),
    ips: Sequence[str] = (),
    server: bool = False,
    client: bool = False,
    days: int = 7,
    clock: Clock | None = None,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A leaf certificate (ECDSA P-256) signed by ``ca_key`` for server and/or client use;
    ``dns_names`` and ``ips`` become its subject alternative names, in that order."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID
    key = ec.generate_private_key(ec.SECP256R1())
    not_before, not_after = _validity(days, clock)
    usages = [ExtendedKeyUsageOID.SERVER_AUTH] if server else []
    if client:
        usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
    builder = (
        x509.CertificateBuilder().subject_name(_name(common_name, org))
        .issuer_name(ca_cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                       critical=False)
        .add_extension(_authority_key_id(ca_cert), critical=False)
    )
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def generate_certs(
    directory: str | os.PathLike[str],
    dns_names: Sequence[str],
    ip_addresses: Sequence[str] = (),
    *,
    valid_days: int = 365,
    clock: Clock | None = None,
) -> CertificatePaths:
    """Create a self-signed CA and a serving certificate for ``dns_names``/``ip_addresses``."""
    from cryptography.hazmat.primitives import serialization
    if not dns_names and not ip_addresses:
        raise ValueError("at least one DNS name or IP address is required")
    ca_key, ca_cert = new_ca(days=valid_days, clock=clock)
    key, cert = issue_cert(ca_key, ca_cert,
                           common_name=dns_names[0] if dns_names else ip_addresses[0],
                           dns_names=dns_names, ips=ip_addresses, server=True,
                           days=valid_days, clock=clock)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = CertificatePaths(out / "ca.crt", out / "tls.crt", out / "tls.key")
    pem = serialization.Encoding.PEM
    _write(paths.ca_file, ca_cert.public_bytes(pem), 0o644)
    _write(paths.cert_file, cert.public_bytes(pem), 0o644)
    _write(paths.key_file, key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()), 0o600)
    return paths


def self_signed_cert(hosts: Sequence[str] = (), *,
                     common_name: str = "pyctrl-metrics") -> tuple[bytes, bytes]:
    """A serving certificate (PEM) for ``localhost``, 127.0.0.1 and ``hosts``, and its key
    (PEM, PKCS8): a throwaway CA (its key is dropped here) signs it, so nothing can trust it
    but by choice."""
    from cryptography.hazmat.primitives import serialization
    dns: list[str] = []
    ips: list[str] = []
    for host in dict.fromkeys(["localhost", "127.0.0.1", *hosts]):
        try:
            ipaddress.ip_address(host)
        except ValueError:
            dns.append(host)
        else:
            ips.append(host)
    ca_key, ca_cert = new_ca(f"{common_name}-ca", days=365)
    key, cert = issue_cert(ca_key, ca_cert, common_name=common_name, dns_names=dns,
                           ips=ips, server=True, days=365)
    key_pem = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def serving_context(cert_dir: str | None = None, hosts: Sequence[str] = ()) -> ssl.SSLContext:
    """A TLS 1.2+ server context from ``cert_dir`` (tls.crt, tls.key), else self-signed."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_dir:
        cert, key = Path(cert_dir) / "tls.crt", Path(cert_dir) / "tls.key"
        for path in (cert, key):
            if not path.is_file():
                raise FileNotFoundError(f"metrics serving certificate: {path} does not exist")
        try:
            ctx.load_cert_chain(str(cert), str(key))
        except ssl.SSLError as err:
            raise ValueError(f"metrics serving certificate {cert} / {key}: {err}") from err
        return ctx
    cert_pem, key_pem = self_signed_cert(hosts)
    with tempfile.TemporaryDirectory(prefix="pyctrl-metrics-") as tmp:
        cert_file, key_file = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        with open(cert_file, "wb") as f:
            f.write(cert_pem)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key_pem)
        ctx.load_cert_chain(cert_file, key_file)
    return ctx
