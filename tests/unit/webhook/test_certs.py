"""generate_certs: a CA and a serving certificate for the given names, written atomically."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest
from cryptography import x509

from pyctrl.webhook import CertificatePaths, generate_certs


def test_generated_certificates(tmp_path: Path) -> None:
    certs: CertificatePaths = generate_certs(tmp_path, ["localhost", "svc.ns.svc"],
                                             ["127.0.0.1"])
    ca = x509.load_pem_x509_certificate(certs.ca_file.read_bytes())
    cert = x509.load_pem_x509_certificate(certs.cert_file.read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost", "svc.ns.svc"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert stat.S_IMODE(certs.key_file.stat().st_mode) == 0o600
    assert base64.b64decode(certs.ca_bundle()) == certs.ca_file.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]


def test_generate_certs_needs_a_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one"):
        generate_certs(tmp_path, [])
