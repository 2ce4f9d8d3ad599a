"""Fixtures for the webhook server tests: certificates and started servers.

The servers listen on real sockets on 127.0.0.1 (port 0); every server a test starts is shut
down after it, so the thread-leak check sees no connection or watcher thread left.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyctrl.webhook import CertificatePaths, WebhookServer, WebhookServerOptions
from tests.unit.webhook.helpers import HANDLERS, Start, new_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertificatePaths:
    return new_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def start() -> Iterator[Start]:
    """``start(cert_dir, **config)``: a started server with the test HANDLERS."""
    made: list[WebhookServer] = []

    def make(cert_dir: Path, **config: Any) -> WebhookServer:
        config.setdefault("host", "127.0.0.1")
        config.setdefault("port", 0)
        clock = config.pop("clock", None)
        server = WebhookServer(WebhookServerOptions(cert_dir=str(cert_dir), **config), HANDLERS,
                               clock=clock)
        made.append(server)
        server.start()
        return server

    yield make
    for server in made:
        server.shutdown()
