"""Helpers for the webhook server tests: handlers, certificates, HTTPS requests."""

from __future__ import annotations

import http.client
import os
import shutil
import socket
import ssl
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pyctrl.webhook import (
    AdmissionResponse,
    CertificatePaths,
    WebhookServer,
    allowed,
    denied,
    generate_certs,
    patched,
)


def deny(request: Mapping[str, object]) -> AdmissionResponse:
    return denied(f"no to {request.get('operation')}", code=422, reason="Invalid")


def patch(request: Mapping[str, object]) -> AdmissionResponse:
    return patched([{"op": "add", "path": "/spec/x", "value": 1}])


def allow(request: Mapping[str, object]) -> AdmissionResponse:
    return allowed()


def boom(request: Mapping[str, object]) -> AdmissionResponse:
    raise RuntimeError("handler bug")


HANDLERS = {"/deny": deny, "/patch": patch, "/allow": allow, "/boom": boom}


def review(uid: str = "req-1", operation: str = "CREATE") -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "operation": operation, "object": {"spec": {}}}}


def new_certs(directory: Path) -> CertificatePaths:
    """A fresh CA and serving certificate for 127.0.0.1/localhost in ``directory``."""
    return generate_certs(directory, ["localhost"], ["127.0.0.1"])


def install(source: Path, target: Path, names: tuple[str, ...] = ("tls.crt", "tls.key")) -> None:
    """Copy files into ``target`` one by one, each replaced atomically (as cert-manager's
    secret update reaches a mounted directory without the ..data swap)."""
    for name in names:
        tmp = target / f".{name}.new"
        shutil.copyfile(source / name, tmp)
        os.replace(tmp, target / name)


def request(port: int, ca_file: Path, method: str, path: str,
            body: bytes | None = None) -> tuple[int, bytes]:
    context = ssl.create_default_context(cafile=str(ca_file))  # verifies the IP SAN
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def presented_cert(port: int) -> bytes:
    """The DER certificate the server presents in a new TLS handshake (not verified)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        conn.connect()
        assert conn.sock is not None
        der = conn.sock.getpeercert(binary_form=True)
        assert isinstance(der, bytes)
        return der
    finally:
        conn.close()


def der(cert_file: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(cert_file.read_text())


Start = Callable[..., WebhookServer]


def closed(sock: socket.socket, wait: float) -> bool:
    """Whether the server closed ``sock`` within ``wait`` seconds (EOF, reset or TLS error)."""
    sock.settimeout(wait)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:  # reset, or a TLS alert/EOF: the server closed it
        return True
