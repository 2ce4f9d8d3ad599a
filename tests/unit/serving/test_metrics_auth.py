"""Secure /metrics: the TokenReview + SubjectAccessReview filter (on a FakeClient) and the
HTTPS metrics server of a Manager (TLS, 401/403/200, probes still plain HTTP)."""

from __future__ import annotations

import http.client
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from pyctrl import HealthOptions, ManagerOptions, MetricsOptions
from pyctrl.errors import ServerError
from pyctrl.kube import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS
from pyctrl.manager import Manager
from pyctrl.serving import (
    MetricsAuth,
    self_signed_cert,
    serving_context,
)
from pyctrl.testing.fake_client import Action, FakeClient
from pyctrl.testing.fake_clock import FakeClock
from tests.threads import running_manager
from tests.unit.manager.helpers import get_url as _get

USERS = {"good-token": "system:serviceaccount:mon:prometheus",
         "other-token": "system:serviceaccount:mon:nosy"}
ALLOWED = {"system:serviceaccount:mon:prometheus"}


class ApiServer:
    """Reactors answering reviews like an apiserver with one metrics-reader binding."""

    def __init__(self, client: FakeClient) -> None:
        self.client = client
        self.fail_sar = False
        client.prepend_reactor("create", TOKEN_REVIEWS, self.token_review)
        client.prepend_reactor("create", SUBJECT_ACCESS_REVIEWS, self.access_review)

    def token_review(self, action: Action) -> dict[str, Any]:
        user = USERS.get(action.object["spec"]["token"])
        status: dict[str, Any] = {"authenticated": user is not None}
        if user is not None:
            status["user"] = {"username": user, "uid": "u-1",
                              "groups": ["system:serviceaccounts"]}
        return {**action.object, "status": status}

    def access_review(self, action: Action) -> dict[str, Any]:
        if self.fail_sar:
            raise ServerError("etcd is sad", 500, "InternalError")
        spec = action.object["spec"]
        allowed = (spec["user"] in ALLOWED and spec["nonResourceAttributes"]
                   == {"path": "/metrics", "verb": "get"})
        return {**action.object, "status": {"allowed": allowed}}

    def reviews(self) -> list[str]:
        return [a.resource.plural for a in self.client.actions if a.verb == "create"]


@pytest.fixture
def api() -> ApiServer:
    return ApiServer(FakeClient())


def test_missing_or_malformed_token_is_401_without_api_calls(api: ApiServer) -> None:
    auth = MetricsAuth(api.client, clock=FakeClock())
    for header in (None, "", "Basic dXNlcjpwdw==", "Bearer ", "Bearer"):
        denied = auth("/metrics", header)
        assert denied is not None and denied[0] == 401, header
    assert api.reviews() == []


def test_unknown_token_is_401(api: ApiServer) -> None:
    denied = MetricsAuth(api.client, clock=FakeClock())("/metrics", "Bearer forged")
    assert denied is not None and denied[0] == 401
    assert api.reviews() == ["tokenreviews"]


def test_authenticated_but_not_authorized_is_403_naming_the_user(api: ApiServer) -> None:
    denied = MetricsAuth(api.client, clock=FakeClock())("/metrics", "Bearer other-token")
    assert denied is not None and denied[0] == 403
    assert b"system:serviceaccount:mon:nosy" in denied[2]
    assert api.reviews() == ["tokenreviews", "subjectaccessreviews"]


def test_authorized_user_passes_and_the_review_carries_the_user(api: ApiServer) -> None:
    assert MetricsAuth(api.client, clock=FakeClock())("/metrics", "Bearer good-token") is None
    sar = next(a.object for a in api.client.actions if a.resource == SUBJECT_ACCESS_REVIEWS)
    assert sar["spec"] == {"user": "system:serviceaccount:mon:prometheus", "uid": "u-1",
                           "groups": ["system:serviceaccounts"],
                           "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}


def test_other_paths_are_authorized_separately(api: ApiServer) -> None:
    denied = MetricsAuth(api.client, clock=FakeClock())("/debug", "Bearer good-token")
    assert denied is not None and denied[0] == 403


def test_decisions_are_cached_per_token_for_the_ttl(api: ApiServer) -> None:
    clock = FakeClock()
    auth = MetricsAuth(api.client, clock=clock, ttl=10.0)
    for _ in range(5):
        assert auth("/metrics", "Bearer good-token") is None
        denied = auth("/metrics", "Bearer other-token")
        assert denied is not None and denied[0] == 403
    assert len(api.reviews()) == 4  # two reviews per token, once
    clock.step(10.5)
    assert auth("/metrics", "Bearer good-token") is None
    assert len(api.reviews()) == 6


def test_failed_reviews_are_500_and_not_cached(api: ApiServer) -> None:
    auth = MetricsAuth(api.client, clock=FakeClock())
    api.fail_sar = True
    denied = auth("/metrics", "Bearer good-token")
    assert denied is not None and denied[0] == 500
    api.fail_sar = False
    assert auth("/metrics", "Bearer good-token") is None


def test_cache_is_bounded(api: ApiServer) -> None:
    auth = MetricsAuth(api.client, clock=FakeClock(), max_negative=2)
    for i in range(5):
        auth("/metrics", f"Bearer token-{i}")
    assert auth.cached() == (0, 2)


# -- the Manager's HTTPS metrics server -------------------------------------------------------
@pytest.fixture
def secure_manager(api: ApiServer) -> Iterator[Manager]:
    mgr = Manager(api.client, ManagerOptions(
        metrics=MetricsOptions(bind_address="127.0.0.1:0", secure=True),
        health=HealthOptions(bind_address="127.0.0.1:0")), clock=FakeClock())
    with running_manager(mgr):
        yield mgr


def test_manager_serves_metrics_over_https_with_auth_and_probes_over_http(
    secure_manager: Manager,
) -> None:
    metrics, probes = secure_manager.metrics_address, secure_manager.health_probe_address
    assert metrics is not None and probes is not None
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # the self-signed certificate made at start
    url = f"https://127.0.0.1:{metrics[1]}/metrics"
    assert _get(url, context=insecure)[0] == 401
    assert _get(url, "forged", insecure)[0] == 401
    assert _get(url, "other-token", insecure)[0] == 403
    code, body = _get(url, "good-token", insecure)
    assert code == 200 and "process_cpu_seconds_total" in body
    # Plain HTTP is not served on the metrics port.
    with pytest.raises((OSError, http.client.HTTPException)):
        _get(f"http://127.0.0.1:{metrics[1]}/metrics", "good-token")
    with pytest.raises(urllib.error.URLError):  # the certificate is not trusted by default
        _get(url, "good-token")
    assert _get(f"http://127.0.0.1:{probes[1]}/healthz") == (200, "ok")


def test_serving_context_loads_a_cert_dir_and_names_missing_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "tls.crt")):
        serving_context(str(tmp_path))
    cert, key = self_signed_cert(["metrics.example"])
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    assert serving_context(str(tmp_path)).minimum_version == ssl.TLSVersion.TLSv1_2


def test_generated_certificate_comes_from_the_shared_helper() -> None:
    cert_pem, key_pem = self_signed_cert(["metrics.example", "10.0.0.7", "localhost"])
    cert = x509.load_pem_x509_certificate(cert_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost", "metrics.example"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == [
        "127.0.0.1", "10.0.0.7"]
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    # issue_cert's leaf: signed by a throwaway CA of its own, not by itself.
    assert cert.issuer != cert.subject
    assert cert.issuer.rfc4514_string() == "CN=pyctrl-metrics-ca"
    assert b"PRIVATE KEY" in key_pem
