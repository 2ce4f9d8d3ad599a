"""A local webhook server the apiserver can call, and its certificate rotation.

Contract: :class:`LocalWebhookServer` runs a :class:`pyctrl.webhook.WebhookServer` on
127.0.0.1 with a CA and serving certificate of its own; it stops and starts again on the
same port. :func:`install_serving_cert` (and :meth:`LocalWebhookServer.rotate` with it)
replaces the certificate under the running server as a mounted Secret changes: certificate,
then key, each file atomically (:mod:`pyctrl.testing.envtest.webhooks`).
"""

from __future__ import annotations

import os
import shutil
import types
from collections.abc import Mapping
from pathlib import Path

from pyctrl.webhook import CertificatePaths, ServedHandler, WebhookServer, WebhookServerOptions
from pyctrl.webhook import generate_certs as _generate_certs

__all__ = ["LocalWebhookServer", "install_serving_cert"]


def install_serving_cert(source: CertificatePaths, cert_dir: Path) -> None:
    """Copy ``tls.crt`` then ``tls.key`` into ``cert_dir``, each file atomically (the pair is
    briefly mismatched, as when the kubelet updates a mounted Secret)."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    for src in (source.cert_file, source.key_file):
        tmp = cert_dir / f".{src.name}.new"
        shutil.copyfile(src, tmp)
        os.replace(tmp, cert_dir / src.name)


class LocalWebhookServer:
    """A :class:`WebhookServer` on 127.0.0.1 with its own certificates (see
    :mod:`pyctrl.testing.envtest.webhooks`)."""

    def __init__(self, handlers: Mapping[str, ServedHandler], directory: Path, *,
                 cert_poll_seconds: float = 0.2) -> None:
        self.handlers = dict(handlers)
        self.directory = Path(directory)
        self.cert_dir = self.directory / "serving-certs"
        self.cert_poll_seconds = cert_poll_seconds
        self._generation = 0
        self.certs = self._new_certs()
        install_serving_cert(self.certs, self.cert_dir)
        self._port = 0
        self.server: WebhookServer | None = None

    def _new_certs(self) -> CertificatePaths:
        self._generation += 1
        return _generate_certs(self.directory / f"certs-{self._generation}", ["localhost"],
                               ["127.0.0.1"])

    @property
    def ca_pem(self) -> bytes:
        """The CA of the certificates generated last (what ``caBundle`` should trust)."""
        return self.certs.ca_file.read_bytes()

    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError("the webhook server was never started")
        return self._port

    @property
    def url_base(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start serving (again, on the same port after :meth:`stop`)."""
        if self.server is not None:
            return
        server = WebhookServer(WebhookServerOptions(
            cert_dir=str(self.cert_dir), host="127.0.0.1", port=self._port,
            cert_poll_seconds=self.cert_poll_seconds), self.handlers)
        server.start()
        self.server, self._port = server, server.port

    def stop(self) -> None:
        """Stop serving: the apiserver's calls get "connection refused". Idempotent."""
        if self.server is not None:
            self.server.shutdown()
            self.server = None

    def rotate(self) -> CertificatePaths:
        """Generate a new CA and serving certificate (not yet served: see
        :func:`install_serving_cert` with :attr:`cert_dir`) and return them."""
        self.certs = self._new_certs()
        return self.certs

    def __enter__(self) -> LocalWebhookServer:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: types.TracebackType | None) -> None:
        self.stop()
