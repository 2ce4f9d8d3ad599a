"""The Manager's two HTTP servers: /metrics and the probes, started and stopped together.

Contract: :func:`metrics_server` serves a registry at ``/metrics``, over HTTPS with every
request authorized when given an ``ssl_context`` and ``authorize``; :func:`probe_server`
serves ``/healthz`` and ``/readyz`` (one :class:`~pyctrl.serving.healthz.Checks` each,
anything else 404) over plain HTTP. :class:`ServerSet` makes (binds) and starts a set of
named servers and publishes their addresses together once every one listens (a caller that
sees one address sees them all); if one fails to bind or start, the ones made are shut down
and the error raised.
``shutdown`` closes every server and joins its threads. :func:`server_factories` is what a
Manager serves: /metrics at ``metrics_address`` (HTTPS from ``cert_dir`` or self-signed, with
``authorize()`` in front, when ``secure``) and the probes at ``probe_address``; an address
``"0"`` leaves that server out.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping

from prometheus_client import CollectorRegistry

from pyctrl.serving.certs import serving_context
from pyctrl.serving.healthz import Checks
from pyctrl.serving.http import TEXT, Authorizer, HTTPServerThread, Response, parse_bind_address
from pyctrl.serving.metrics import metrics_handler

__all__ = ["ServerSet", "metrics_server", "probe_server", "server_factories"]


def metrics_server(address: tuple[str, int], registry: CollectorRegistry, *,
                   ssl_context: ssl.SSLContext | None = None,
                   authorize: Authorizer | None = None) -> HTTPServerThread:
    """The /metrics server of ``registry`` (not started)."""
    return HTTPServerThread("metrics", address, metrics_handler(registry),
                            ssl_context=ssl_context, authorize=authorize)


def probe_server(address: tuple[str, int], *checks: Checks) -> HTTPServerThread:
    """The probe server answering ``/<endpoint>[/<check>]`` for each of ``checks``."""

    def probes(path: str, query: dict[str, list[str]], headers: Mapping[str, str]) -> Response:
        for family in checks:
            prefix = "/" + family.endpoint
            if path == prefix or path.startswith(prefix + "/"):
                return family.serve(path, query)
        return 404, TEXT, b"not found\n"

    return HTTPServerThread("probes", address, probes)


def server_factories(*, metrics_address: str, probe_address: str,
                     registry: CollectorRegistry, checks: tuple[Checks, ...], secure: bool,
                     cert_dir: str | None, authorize: Callable[[], Authorizer],
                     ) -> dict[str, Callable[[], HTTPServerThread]]:
    """The Manager's servers, to :meth:`ServerSet.start` (see module docstring)."""
    factories: dict[str, Callable[[], HTTPServerThread]] = {}
    metrics_bind = parse_bind_address(metrics_address)
    if metrics_bind is not None:
        ctx = serving_context(cert_dir) if secure else None
        auth = authorize() if secure else None
        factories["metrics"] = lambda: metrics_server(metrics_bind, registry, ssl_context=ctx,
                                                      authorize=auth)
    probe_bind = parse_bind_address(probe_address)
    if probe_bind is not None:
        factories["probes"] = lambda: probe_server(probe_bind, *checks)
    return factories


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
