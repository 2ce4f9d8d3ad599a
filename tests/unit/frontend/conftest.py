"""Front-end test fixtures: certificates, ``serve`` (started Frontends, shut down after the
test), ``loop_clock`` (install before ``serve`` to drive its deadlines) and ``loop_hold``
(install before ``serve`` to hold its loop still)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from pyctrl.frontend import Frontend, FrontendOptions
from pyctrl.webhook import CertificatePaths, CertWatcher
from tests.unit.frontend.helpers import ENTERED, GATE, LoopClock, LoopHold, route
from tests.unit.webhook.helpers import new_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertificatePaths:
    return new_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def serve(certs: CertificatePaths) -> Iterator[Any]:
    made: list[Frontend] = []

    def make(tls: bool = False, **config: Any) -> Frontend:
        config.setdefault("host", "127.0.0.1")
        context = None
        if tls:
            watcher = CertWatcher(certs.cert_file, certs.key_file)
            watcher.load()
            context = watcher.context
        server = Frontend("test", FrontendOptions(**config), route, context=context)
        made.append(server)
        server.start()
        return server

    yield make
    GATE.set()
    for server in made:
        server.shutdown()
    GATE.clear()
    ENTERED.clear()


@pytest.fixture
def loop_clock(monkeypatch: pytest.MonkeyPatch) -> LoopClock:
    clock = LoopClock()
    monkeypatch.setattr(asyncio, "new_event_loop", clock.new_loop)
    return clock


@pytest.fixture
def loop_hold(monkeypatch: pytest.MonkeyPatch) -> LoopHold:
    hold = LoopHold()
    monkeypatch.setattr(asyncio, "new_event_loop", hold.new_loop)
    return hold
