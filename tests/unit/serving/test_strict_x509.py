"""Every certificate pyctrl generates passes strict X.509 verification.

Python 3.13's default client context sets ``ssl.VERIFY_X509_STRICT``: OpenSSL then refuses a
certificate without an Authority Key Identifier (and checks key usage, basic constraints and
the rest of RFC 5280's profile). Each test here runs a real TLS handshake, in memory, between
a server serving the generated certificate and a client whose context sets that flag (the flag
exists on 3.11 too, so the check does not wait for 3.13).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

import pyctrl.serving.certs as certs_module
from pyctrl.serving.certs import generate_certs, serving_context
from pyctrl.testing.envtest.certs import generate_pki


def _strict_client(cafile: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(cafile))
    ctx.verify_flags |= ssl.VERIFY_X509_STRICT
    return ctx


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext, hostname: str) -> None:
    """Run a TLS handshake between the two contexts over memory BIOs; raises ssl errors."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    s_out = ssl.MemoryBIO()  # the server's bytes, copied into to_client after each step
    c = client.wrap_bio(to_client, to_server, server_hostname=hostname)
    s = server.wrap_bio(to_server, s_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(20):
        for name, side in (("client", c), ("server", s)):
            if not done[name]:
                try:
                    side.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        to_client.write(s_out.read())
        if all(done.values()):
            # TLS 1.3: the server reads the client's certificate after its own handshake ends.
            s.write(b"x")
            to_client.write(s_out.read())
            assert c.read(1) == b"x"
            c.write(b"y")
            assert s.read(1) == b"y"
            return
    raise AssertionError(f"handshake did not finish: {done}")


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def test_webhook_serving_certificate_is_strict(tmp_path: Path) -> None:
    paths = generate_certs(tmp_path, ["webhook.ns.svc"], ["127.0.0.1"])
    _handshake(serving_context(str(tmp_path)), _strict_client(paths.ca_file), "webhook.ns.svc")


def test_self_signed_metrics_certificate_is_strict(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The metrics server's throwaway CA is dropped; capture it to trust it here."""
    made: list[x509.Certificate] = []
    new_ca: Callable[..., tuple[object, x509.Certificate]] = certs_module.new_ca

    def capture(*args: object, **kwargs: object) -> tuple[object, x509.Certificate]:
        key, cert = new_ca(*args, **kwargs)
        made.append(cert)
        return key, cert

    monkeypatch.setattr(certs_module, "new_ca", capture)
    server = serving_context(None, hosts=["metrics.ns.svc"])
    (ca,) = made
    (tmp_path / "ca.crt").write_bytes(_pem(ca))
    for host in ("localhost", "metrics.ns.svc"):
        _handshake(server, _strict_client(tmp_path / "ca.crt"), host)


def test_envtest_apiserver_and_admin_certificates_are_strict(tmp_path: Path) -> None:
    pki = generate_pki(tmp_path / "pki")
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pki.serving_cert, pki.serving_key)
    server.load_verify_locations(cafile=str(pki.ca_cert))
    server.verify_mode = ssl.CERT_REQUIRED  # the admin's client certificate, verified strictly
    server.verify_flags |= ssl.VERIFY_X509_STRICT
    client = _strict_client(pki.ca_cert)
    client.load_cert_chain(pki.admin_cert, pki.admin_key)
    for host in ("127.0.0.1", "kubernetes.default.svc"):
        _handshake(server, client, host)


def test_generated_certificates_carry_the_strict_profile(tmp_path: Path) -> None:
    """What strict verification needs, spelled out: key identifiers that chain, key usage,
    critical basic constraints (CA:TRUE only on the CA), extended key usage on leaves."""
    pki = generate_pki(tmp_path / "pki")
    ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    ca_ski = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    basic = ca.extensions.get_extension_for_class(x509.BasicConstraints)
    assert basic.critical and basic.value.ca
    assert ca.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    for path in (pki.serving_cert, pki.admin_cert):
        leaf = x509.load_pem_x509_certificate(path.read_bytes())
        aki = leaf.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
        assert aki.key_identifier == ca_ski.digest
        leaf.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
        usage = leaf.extensions.get_extension_for_class(x509.KeyUsage)
        assert usage.critical and usage.value.digital_signature
        assert not usage.value.key_cert_sign
        basic = leaf.extensions.get_extension_for_class(x509.BasicConstraints)
        assert basic.critical and not basic.value.ca
        leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage)
