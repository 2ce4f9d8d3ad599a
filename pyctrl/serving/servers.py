"""The Manager's two HTTP servers: /metrics and the probes, started and stopped together.

Contract: :func:`metrics_server` serves a registry at ``/metrics``, over HTTPS with every
request authorized when given an ``ssl_context`` and ``authorize``; :func:`probe_server`
serves ``/healthz`` and ``/readyz`` (one :class:`~pyctrl.serving.healthz.Checks` each,
anything else 404) over plain HTTP. :class:`ServerSet` makes (binds) and starts a set of
named servers and publishes their addresses together once every one listens (a caller that
sees one address sees them all); if one fails to bind or start, the ones made are shut down
and the error raised.
``shutdown`` closes every server and joins its threads.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from pyctrl.serving.healthz import Checks
from pyctrl.serving.http import TEXT, Authorizer, HTTPServerThread, Response
from pyctrl.serving.metrics import metrics_handler

__all__ = ["ServerSet", "metrics_server", "probe_server"]


def metrics_server(address: tuple[str, int], registry: CollectorRegistry, *,
                   ssl_context: ssl.SSLContext | None = None,
                   authorize: Authorizer | None = None) -> HTTPServerThread:
    """The /metrics server of ``registry`` (not started)."""
    return HTTPServerThread("metrics", address, metrics_handler(registry),
                            ssl_context=ssl_context, authorize=authorize)


def probe_server(address: tuple[str, int], *checks: Checks) -> HTTPServerThread:
    """The probe server answering ``/<endpoint>[/<check>]`` for each of ``checks``."""

    def probes(path: str, query: dict[str, list[str]]) -> Response:
        for family in checks:
            prefix = "/" + family.endpoint
            if path == prefix or path.startswith(prefix + "/"):
                return family.serve(path, query)
        return 404, TEXT, b"not found\n"

    return HTTPServerThread("probes", address, probes)


class ServerSet:
    """Named servers started and published together (see module docstring)."""

    def __init__(self) -> None:
        self._servers: dict[str, HTTPServerThread] = {}

    def start(self, factories: dict[str, Callable[[], HTTPServerThread]]) -> None:
        """Make (bind) and start each server; all or none (see module docstring)."""
        servers: dict[str, HTTPServerThread] = {}
        try:
            for name, make in factories.items():
                servers[name] = make()
                servers[name].start()
        except BaseException:
            for server in servers.values():
                server.shutdown()
            raise
        # Published together, once every server listens: a test that waited for /metrics
        # then read the probe address raced a second assignment (~1 run in 15 under load).
        self._servers = dict(servers)

    def address(self, name: str) -> tuple[str, int] | None:
        server = self._servers.get(name)
        return server.address if server is not None else None

    def shutdown(self) -> None:
        for server in self._servers.values():
            server.shutdown()
