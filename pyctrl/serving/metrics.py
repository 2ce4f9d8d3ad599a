"""The handler that exposes a Prometheus registry at ``/metrics``.

Contract: :func:`metrics_handler` serves a registry at ``/metrics`` (404 elsewhere) through
prometheus_client's own exposition: the format the ``Accept`` header asks for
(``choose_encoder``: OpenMetrics 1.0 for ``application/openmetrics-text``, else the Prometheus
text format 0.0.4), gzip-compressed when ``Accept-Encoding`` lists ``gzip`` (with
``Content-Encoding: gzip``), ``?name[]=<family>`` restricting the answer to those families as
prometheus_client's own server does; every answer says ``Vary: Accept, Accept-Encoding``.
Metric families once per registry are :func:`pyctrl.collectors.per_registry`'s.
"""

from __future__ import annotations

import gzip
from collections.abc import Mapping

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted

from pyctrl.serving.http import TEXT, Handler, Response

__all__ = ["metrics_handler"]


def metrics_handler(registry: CollectorRegistry) -> Handler:
    """Serve ``registry`` at ``/metrics``, negotiated as the module docstring says."""

    def handle(path: str, query: dict[str, list[str]], headers: Mapping[str, str]) -> Response:
        if path.rstrip("/") != "/metrics":
            return 404, TEXT, b"not found\n"
        encoder, content_type = choose_encoder(headers.get("accept", ""))
        names = query.get("name[]")
        body = encoder(registry.restricted_registry(names) if names else registry)
        vary = ("Vary", "Accept, Accept-Encoding")
        if gzip_accepted(headers.get("accept-encoding", "")):
            return 200, content_type, gzip.compress(body), (("Content-Encoding", "gzip"), vary)
        return 200, content_type, body, (vary,)

    return handle
