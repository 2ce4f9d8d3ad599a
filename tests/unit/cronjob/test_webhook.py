"""webhook.py: AdmissionReview logic with plain dicts, and the server over real HTTPS."""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import socket
import ssl
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from cronjob_controller import webhook
from cronjob_controller.webhook import (
    MUTATE_PATH,
    VALIDATE_PATH,
    CertificatePaths,
    ReviewError,
    WebhookConfig,
    WebhookServer,
    generate_certs,
    mutate_review,
    validate_review,
)


def cronjob(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"schedule": "* * * * *", "jobTemplate": {"spec": {}}}
    base.update(spec)
    return {"apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
            "metadata": {"name": "hello", "namespace": "ns"}, "spec": base}


def review(obj: dict[str, Any] | None, operation: str = "CREATE",
           old: dict[str, Any] | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {"uid": "req-1", "operation": operation, "object": obj}
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def response(result: dict[str, Any]) -> dict[str, Any]:
    assert result["apiVersion"] == "admission.k8s.io/v1"
    assert result["kind"] == "AdmissionReview"
    assert result["response"]["uid"] == "req-1"
    return result["response"]  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------
# Review logic


def test_valid_cronjob_is_allowed() -> None:
    assert response(validate_review(review(cronjob()))) == {"uid": "req-1", "allowed": True}


def test_invalid_schedule_is_denied_naming_field_and_problem() -> None:
    resp = response(validate_review(review(cronjob(schedule="61 * * * *"))))
    assert resp["allowed"] is False
    status = resp["status"]
    assert (status["code"], status["reason"], status["status"]) == (422, "Invalid", "Failure")
    assert status["message"] == (
        'CronJob.batch.pyctrl.io "hello" is invalid: spec.schedule: Invalid value: '
        '"61 * * * *": minute field "61": 61 is above the maximum 59')
    assert status["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.schedule",
        "message": 'Invalid value: "61 * * * *": minute field "61": 61 is above the maximum 59'}]


def test_several_errors_are_listed() -> None:
    resp = response(validate_review(review(cronjob(schedule="@daily", timeZone="Local",
                                                   concurrencyPolicy="Never"))))
    message = resp["status"]["message"]
    assert "[spec.timeZone: Invalid value: \"Local\"" in message
    assert 'spec.concurrencyPolicy: Unsupported value: "Never"' in message
    assert len(resp["status"]["details"]["causes"]) == 2


def test_name_too_long_is_denied() -> None:
    obj = cronjob()
    obj["metadata"]["name"] = "x" * 53
    resp = response(validate_review(review(obj)))
    assert resp["allowed"] is False
    assert "metadata.name" in resp["status"]["message"]


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
def test_other_operations_are_allowed(operation: str) -> None:
    assert response(validate_review(review(None, operation)))["allowed"] is True


def test_object_being_deleted_is_allowed() -> None:
    obj = cronjob(schedule="bad")
    obj["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert response(validate_review(review(obj, "UPDATE", cronjob(schedule="bad"))))["allowed"]


def test_update_tolerates_unchanged_invalid_fields() -> None:
    old = cronjob(schedule="0 0 L * *")
    new = cronjob(schedule="0 0 L * *", suspend=True)
    assert response(validate_review(review(new, "UPDATE", old)))["allowed"] is True


def test_update_rejects_changed_invalid_fields() -> None:
    old = cronjob(schedule="0 0 L * *")
    resp = response(validate_review(review(cronjob(schedule="0 0 W * *"), "UPDATE", old)))
    assert resp["allowed"] is False
    resp = response(validate_review(review(cronjob(schedule="61 * * * *"), "UPDATE", cronjob())))
    assert resp["allowed"] is False


def test_mutate_patches_in_the_defaults() -> None:
    resp = response(mutate_review(review(cronjob(suspend=True))))
    assert resp["allowed"] is True
    assert resp["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(resp["patch"])) == [
        {"op": "add", "path": "/spec/concurrencyPolicy", "value": "Allow"},
        {"op": "add", "path": "/spec/successfulJobsHistoryLimit", "value": 3},
        {"op": "add", "path": "/spec/failedJobsHistoryLimit", "value": 1},
    ]


def test_mutate_without_anything_to_default_has_no_patch() -> None:
    obj = cronjob(concurrencyPolicy="Forbid", suspend=False, successfulJobsHistoryLimit=1,
                  failedJobsHistoryLimit=1)
    assert response(mutate_review(review(obj))) == {"uid": "req-1", "allowed": True}
    assert response(mutate_review(review(None, "DELETE"))) == {"uid": "req-1", "allowed": True}


@pytest.mark.parametrize("bad", [
    {},
    {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "x"}},
    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"op": 1}},
])
def test_malformed_reviews_raise(bad: dict[str, Any]) -> None:
    with pytest.raises(ReviewError):
        validate_review(bad)
    with pytest.raises(ReviewError):
        mutate_review(bad)


# ---------------------------------------------------------------------------------------
# Certificates


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertificatePaths:
    return generate_certs(tmp_path_factory.mktemp("certs"), ["localhost", "svc.ns.svc"],
                          ["127.0.0.1"])


def test_generated_certificates(certs: CertificatePaths) -> None:
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
    assert sorted(p.name for p in certs.ca_file.parent.iterdir()) == [
        "ca.crt", "tls.crt", "tls.key"]


def test_generate_certs_needs_a_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one"):
        generate_certs(tmp_path, [])


# ---------------------------------------------------------------------------------------
# The HTTPS server


@pytest.fixture
def server(certs: CertificatePaths) -> Iterator[WebhookServer]:
    srv = WebhookServer(WebhookConfig(cert_file=str(certs.cert_file),
                                      key_file=str(certs.key_file), host="127.0.0.1", port=0,
                                      max_body_bytes=64 * 1024))
    srv.start()
    try:
        yield srv
    finally:
        srv.shutdown()


def request(srv: WebhookServer, certs: CertificatePaths, method: str, path: str,
            body: bytes | None = None) -> tuple[int, bytes]:
    context = ssl.create_default_context(cafile=str(certs.ca_file))  # verifies the IP SAN
    conn = http.client.HTTPSConnection("127.0.0.1", srv.port, context=context, timeout=10)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_server_validates_over_https(server: WebhookServer, certs: CertificatePaths) -> None:
    status, body = request(server, certs, "POST", VALIDATE_PATH,
                           json.dumps(review(cronjob(schedule="* * * * * *"))).encode())
    assert status == 200
    resp = response(json.loads(body))
    assert resp["allowed"] is False
    assert "found 6" in resp["status"]["message"]


def test_server_mutates_over_https(server: WebhookServer, certs: CertificatePaths) -> None:
    status, body = request(server, certs, "POST", MUTATE_PATH + "?timeout=5s",
                           json.dumps(review(cronjob())).encode())
    assert status == 200
    assert response(json.loads(body))["patchType"] == "JSONPatch"


@pytest.mark.parametrize(("method", "path", "body", "code"), [
    ("GET", "/healthz", None, 200),
    ("GET", "/nope", None, 404),
    ("POST", "/nope", b"{}", 404),
    ("POST", VALIDATE_PATH, b"not json", 400),
    ("POST", VALIDATE_PATH, b"[]", 400),
    ("POST", VALIDATE_PATH, b'{"kind": "Pod"}', 400),
    ("POST", VALIDATE_PATH, b" " * (65 * 1024), 413),
])
def test_server_errors(server: WebhookServer, certs: CertificatePaths, method: str, path: str,
                       body: bytes | None, code: int) -> None:
    assert request(server, certs, method, path, body)[0] == code


def test_server_survives_a_failed_handshake(server: WebhookServer,
                                            certs: CertificatePaths) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        raw.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")  # plain HTTP to a TLS port
        with contextlib.suppress(ConnectionResetError):  # a reset is fine: it is not TLS
            assert b"ok" not in raw.recv(1024)
    assert request(server, certs, "GET", "/healthz") == (200, b"ok")


def test_server_handles_concurrent_requests(server: WebhookServer,
                                            certs: CertificatePaths) -> None:
    body = json.dumps(review(cronjob())).encode()
    results: list[int] = []
    lock = threading.Lock()

    def call() -> None:
        code, _ = request(server, certs, "POST", VALIDATE_PATH, body)
        with lock:
            results.append(code)

    threads = [threading.Thread(target=call, name=f"client-{i}") for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert results == [200] * 8


def test_run_serves_until_stop_and_joins(certs: CertificatePaths) -> None:
    srv = WebhookServer(WebhookConfig(cert_file=str(certs.cert_file),
                                      key_file=str(certs.key_file), host="127.0.0.1", port=0))
    stop = threading.Event()
    runner = threading.Thread(target=srv.run, args=(stop,), name="webhook-run")
    runner.start()
    try:
        assert srv.ready.wait(timeout=10)
        assert request(srv, certs, "GET", "/healthz") == (200, b"ok")
    finally:
        stop.set()
        runner.join(timeout=10)
    assert not runner.is_alive()
    assert not srv.ready.is_set()
    srv.shutdown()  # idempotent


def test_port_before_start_and_double_start(certs: CertificatePaths) -> None:
    srv = WebhookServer(WebhookConfig(cert_file=str(certs.cert_file),
                                      key_file=str(certs.key_file), host="127.0.0.1", port=0))
    with pytest.raises(RuntimeError, match="not started"):
        _ = srv.port
    srv.start()
    try:
        with pytest.raises(RuntimeError, match="already started"):
            srv.start()
    finally:
        srv.shutdown()


@pytest.mark.parametrize("kwargs", [{"port": 70000}, {"request_timeout_seconds": 0},
                                    {"max_body_bytes": 0}])
def test_config_is_validated(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        WebhookConfig(cert_file="c", key_file="k", **kwargs)


def test_module_exports() -> None:
    assert {"WebhookServer", "validate_review", "mutate_review", "generate_certs"} <= set(
        webhook.__all__)
