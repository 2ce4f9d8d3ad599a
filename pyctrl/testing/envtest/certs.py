"""Certificates for a throwaway control plane, generated fresh for every ControlPlane.

Contract: :func:`generate_pki` writes into a directory a CA, a serving certificate for the
kube-apiserver (valid for 127.0.0.1, localhost and the in-cluster service names), a client
certificate in group ``system:masters`` for the admin kubeconfig, and an RSA key pair for
service-account token signing. Keys are EC P-256 (fast to generate) except the
service-account key, which is RSA because kube-apiserver's default token algorithm is RS256.
Nothing is reused across ControlPlanes, so tests never depend on leftovers. The CA and leaf
certificates come from :mod:`pyctrl.serving.certs` (one certificate helper in the project).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pyctrl.serving.certs import issue_cert, new_ca

__all__ = ["Pki", "generate_pki", "issue_cert"]

_PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class Pki:
    """Paths of the files :func:`generate_pki` wrote."""

    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_key: Path
    sa_pub: Path


def _write_key(path: Path, key: _PrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def generate_pki(directory: Path, days: int = 7) -> Pki:
    """Generate all certificates and keys a control plane needs into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = new_ca("pyctrl-envtest-ca", days=days)
    serving_key, serving_cert = issue_cert(
        ca_key, ca_cert,
        common_name="kube-apiserver",
        dns_names=["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                   "kubernetes.default.svc.cluster.local"],
        ips=["127.0.0.1", "10.0.0.1"],
        server=True,
        days=days,
    )
    admin_key, admin_cert = issue_cert(
        ca_key, ca_cert, common_name="pyctrl-admin", org="system:masters", client=True,
        days=days,
    )
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pki = Pki(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        admin_cert=directory / "admin.crt",
        admin_key=directory / "admin.key",
        sa_key=directory / "sa.key",
        sa_pub=directory / "sa.pub",
    )
    _write_cert(pki.ca_cert, ca_cert)
    _write_key(pki.ca_key, ca_key)
    _write_cert(pki.serving_cert, serving_cert)
    _write_key(pki.serving_key, serving_key)
    _write_cert(pki.admin_cert, admin_cert)
    _write_key(pki.admin_key, admin_key)
    _write_key(pki.sa_key, sa_key)
    pki.sa_pub.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pki
