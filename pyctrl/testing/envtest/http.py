"""A minimal HTTPS client envtest uses to talk to the apiserver and etcd it started.

Contract: envtest must not depend on :mod:`pyctrl.kube` (the code it exists to test), so it
speaks to the servers with the standard library only: JSON in, JSON out, mutual TLS with the
admin certificate. Errors come back as ``(status, body)``; nothing here retries.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["AdminHttp", "plain_post"]


class AdminHttp:
    """JSON requests to ``server`` as the envtest admin (client certificate)."""

    def __init__(self, server: str, ca_cert: Path, client_cert: Path, client_key: Path) -> None:
        self.server = server.rstrip("/")
        self._ctx = ssl.create_default_context(cafile=str(ca_cert))
        self._ctx.load_cert_chain(str(client_cert), str(client_key))

    def request(
        self, method: str, path: str, body: Any = None, timeout: float = 5.0,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.server + path, data=data, method=method,
            headers={"Content-Type": content_type, "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, context=self._ctx, timeout=timeout) as resp:
                raw = resp.read()
                status = int(resp.status)
        except urllib.error.HTTPError as err:
            with err:  # closes its response (3.14 warns of one left open)
                raw = err.read()
                status = int(err.code)
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")


def plain_post(url: str, body: Any, timeout: float = 5.0) -> tuple[int, Any]:
    """POST JSON over plain HTTP (etcd's gRPC gateway on loopback)."""
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status), json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        with err:  # closes its response (3.14 warns of one left open)
            return int(err.code), err.read().decode(errors="replace")
