"""Admission webhooks for CronJobs over HTTPS, plus a self-signed certificate helper.

Contract:

* :func:`validate_review` / :func:`mutate_review` are pure functions from an
  ``admission.k8s.io/v1`` AdmissionReview request to the AdmissionReview response. They use
  :func:`cronjob_controller.api.validate` and :func:`cronjob_controller.api.default_patch`, so
  the webhook, the CRD defaults and the controller agree. A denial carries HTTP-like code 422,
  reason ``Invalid`` and a message naming each field and problem. On UPDATE, errors in fields
  the update did not change are tolerated (ratcheting), so an object stored before the webhook
  existed can still be suspended, relabelled or have its finalizers removed; objects being
  deleted are always allowed. Malformed reviews raise :class:`ReviewError` (HTTP 400).
* :class:`WebhookServer` serves ``POST /validate-batch-pyctrl-io-v1-cronjob`` and
  ``POST /mutate-batch-pyctrl-io-v1-cronjob`` (and ``GET /healthz``) on a
  ``ThreadingHTTPServer``. The TLS handshake runs in the per-connection thread, so a slow
  client cannot stall ``accept``. ``shutdown()`` stops the serving thread, closes the socket
  and joins every connection thread; it is idempotent. Responses close the connection
  (HTTP/1.0), so no idle keep-alive connection can hold shutdown up.
* :func:`generate_certs` writes ``ca.crt``, ``tls.crt``, ``tls.key`` (ECDSA P-256; a CA and a
  serving certificate for the given DNS names and IPs) into a directory, atomically.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import socket
import ssl
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import cast

import orjson
import structlog
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from cronjob_controller.api import KIND, FieldError, default_patch, validate
from pyctrl.clock import Clock, RealClock

__all__ = [
    "MUTATE_PATH",
    "VALIDATE_PATH",
    "CertificatePaths",
    "ReviewError",
    "WebhookConfig",
    "WebhookServer",
    "generate_certs",
    "mutate_review",
    "validate_review",
]

log = structlog.get_logger(__name__)

VALIDATE_PATH = "/validate-batch-pyctrl-io-v1-cronjob"
MUTATE_PATH = "/mutate-batch-pyctrl-io-v1-cronjob"
_REVIEW_API_VERSION = "admission.k8s.io/v1"


class ReviewError(ValueError):
    """The request body is not a usable AdmissionReview."""


# --------------------------------------------------------------------------------------
# Review logic (pure)


def _request(review: Mapping[str, object]) -> Mapping[str, object]:
    if review.get("apiVersion") != _REVIEW_API_VERSION or review.get("kind") != "AdmissionReview":
        raise ReviewError(f"expected an {_REVIEW_API_VERSION} AdmissionReview")
    request = review.get("request")
    if not isinstance(request, Mapping) or not isinstance(request.get("uid"), str):
        raise ReviewError("the AdmissionReview has no request with a uid")
    return cast(Mapping[str, object], request)


def _response(uid: str, **fields: object) -> dict[str, object]:
    return {"apiVersion": _REVIEW_API_VERSION, "kind": "AdmissionReview",
            "response": {"uid": uid, **fields}}


def _value_at(obj: object, path: str) -> object:
    for part in path.split("."):
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(part)
    return obj


def _object(request: Mapping[str, object], key: str) -> Mapping[str, object] | None:
    obj = request.get(key)
    return cast(Mapping[str, object], obj) if isinstance(obj, Mapping) else None


def validate_review(review: Mapping[str, object]) -> dict[str, object]:
    """The validating webhook's AdmissionReview response to ``review``."""
    request = _request(review)
    uid = cast(str, request["uid"])
    obj = _object(request, "object")
    if request.get("operation") not in ("CREATE", "UPDATE") or obj is None:
        return _response(uid, allowed=True)
    if _value_at(obj, "metadata.deletionTimestamp"):
        return _response(uid, allowed=True)
    errors = validate(obj)
    old = _object(request, "oldObject")
    if request.get("operation") == "UPDATE" and old is not None:
        errors = [e for e in errors if _value_at(obj, e.field) != _value_at(old, e.field)]
    if not errors:
        return _response(uid, allowed=True)
    name = _value_at(obj, "metadata.name") or _value_at(obj, "metadata.generateName") or ""
    return _response(uid, allowed=False, status=_invalid_status(str(name), errors))


def _invalid_status(name: str, errors: Sequence[FieldError]) -> dict[str, object]:
    listed = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(map(str, errors)) + "]"
    return {
        "status": "Failure",
        "code": 422,
        "reason": "Invalid",
        "message": f'{KIND}.batch.pyctrl.io "{name}" is invalid: {listed}',
        "details": {
            "name": name, "group": "batch.pyctrl.io", "kind": KIND,
            "causes": [{"reason": e.type.reason, "message": e.body, "field": e.field}
                       for e in errors],
        },
    }


def mutate_review(review: Mapping[str, object]) -> dict[str, object]:
    """The mutating webhook's response: a JSON Patch adding the CRD defaults, if any."""
    request = _request(review)
    uid = cast(str, request["uid"])
    obj = _object(request, "object")
    if request.get("operation") not in ("CREATE", "UPDATE") or obj is None:
        return _response(uid, allowed=True)
    patch = default_patch(obj)
    if not patch:
        return _response(uid, allowed=True)
    return _response(uid, allowed=True, patchType="JSONPatch",
                     patch=base64.b64encode(orjson.dumps(patch)).decode("ascii"))


# --------------------------------------------------------------------------------------
# HTTPS server

_ROUTES: dict[str, Callable[[Mapping[str, object]], dict[str, object]]] = {
    VALIDATE_PATH: validate_review,
    MUTATE_PATH: mutate_review,
}


@dataclass(frozen=True, slots=True)
class WebhookConfig:
    """Where and how to serve. ``port=0`` picks a free port (see ``WebhookServer.port``)."""

    cert_file: str
    key_file: str
    host: str = "0.0.0.0"
    port: int = 9443
    request_timeout_seconds: float = 10.0
    max_body_bytes: int = 3 * 1024 * 1024

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {self.port}")
        if self.request_timeout_seconds <= 0:
            raise ValueError("request_timeout_seconds must be positive")
        if self.max_body_bytes <= 0:
            raise ValueError("max_body_bytes must be positive")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:
        if self.path in ("/healthz", "/readyz"):
            self._send(200, b"ok", "text/plain")
        else:
            self._send(404, b"not found", "text/plain")

    def do_POST(self) -> None:
        route = _ROUTES.get(self.path.split("?", 1)[0])
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._send(411, b"Content-Length required", "text/plain")
            return
        limit = self.server.config.max_body_bytes
        if route is None or not 0 <= length <= limit:
            # Read what the client sent (bounded) before answering: closing a socket with
            # unread input resets the connection and the client never sees the answer.
            self._drain(min(max(length, 0), 4 * limit))
            if route is None:
                self._send(404, b"not found", "text/plain")
            else:
                self._send(413, b"request body too large", "text/plain")
            return
        try:
            review = orjson.loads(self.rfile.read(length))
            if not isinstance(review, dict):
                raise ReviewError("the body is not a JSON object")
            body = orjson.dumps(route(review))
        except (orjson.JSONDecodeError, ReviewError) as err:
            log.info("bad admission request", path=self.path, error=str(err))
            self._send(400, str(err).encode(), "text/plain")
            return
        except Exception:
            log.exception("admission review failed", path=self.path)
            self._send(500, b"internal error", "text/plain")
            return
        self._send(200, body, "application/json")

    def _drain(self, length: int) -> None:
        while length > 0:
            chunk = self.rfile.read(min(length, 64 * 1024))
            if not chunk:
                return
            length -= len(chunk)

    def _send(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("webhook request", message=format % args, client=self.client_address[0])


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True  # server_close() joins every connection thread

    def __init__(self, config: WebhookConfig, context: ssl.SSLContext) -> None:
        self.config = config
        self.context = context
        super().__init__((config.host, config.port), _Handler)

    def finish_request(self, request: socket.socket | tuple[bytes, socket.socket],
                       client_address: tuple[str, int]) -> None:
        sock = cast(socket.socket, request)
        sock.settimeout(self.config.request_timeout_seconds)
        try:
            tls = self.context.wrap_socket(sock, server_side=True)
        except OSError as err:  # includes ssl.SSLError: a failed handshake
            log.debug("TLS handshake failed", error=str(err))
            return
        try:
            _Handler(tls, client_address, self)
        except OSError as err:
            log.debug("webhook connection error", error=str(err))
        finally:
            tls.close()


class WebhookServer:
    """The HTTPS admission server; ``run(stop)`` serves until ``stop`` is set."""

    def __init__(self, config: WebhookConfig) -> None:
        self._config = config
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()  # set once listening (a readiness signal)

    @property
    def port(self) -> int:
        """The bound port (useful with ``port=0``); only valid after ``start()``."""
        if self._server is None:
            raise RuntimeError("the webhook server is not started")
        return self._server.server_address[1]

    def start(self) -> None:
        """Load the certificate, bind and start serving in a named thread."""
        with self._lock:
            if self._server is not None:
                raise RuntimeError("the webhook server is already started")
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(self._config.cert_file, self._config.key_file)
            self._server = _Server(self._config, context)
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                name="webhook-server")
            self._thread.start()
        self.ready.set()
        log.info("webhook server listening", host=self._config.host, port=self.port)

    def run(self, stop: threading.Event) -> None:
        """Serve until ``stop`` is set, then shut down."""
        self.start()
        try:
            stop.wait()
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        """Stop serving, close the socket and join all threads. Safe to call twice."""
        with self._lock:
            server, thread = self._server, self._thread
            self._thread = None
        if server is None or thread is None:
            return
        self.ready.clear()
        server.shutdown()
        server.server_close()
        thread.join()
        log.info("webhook server stopped")


# --------------------------------------------------------------------------------------
# Certificates


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


def _builder(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey,
             not_before: datetime, not_after: datetime) -> x509.CertificateBuilder:
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
            .public_key(public_key).serial_number(x509.random_serial_number())
            .not_valid_before(not_before).not_valid_after(not_after))
