"""/metrics through prometheus_client's exposition: content negotiation, OpenMetrics, gzip.

The handler is called directly for each negotiation case, then served once by a real
:func:`~pyctrl.serving.servers.metrics_server` on loopback (plain HTTP) to check the extra
header fields reach the wire.
"""

from __future__ import annotations

import gzip
import http.client
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge

from pyctrl.serving import metrics_handler
from pyctrl.serving.servers import metrics_server

OPENMETRICS = "application/openmetrics-text; version=1.0.0"  # then charset, escaping
VARY = ("Vary", "Accept, Accept-Encoding")


@pytest.fixture
def registry() -> CollectorRegistry:
    reg = CollectorRegistry()
    Counter("demo_requests", "Requests.", registry=reg).inc()
    Gauge("demo_depth", "Depth.", registry=reg).set(3)
    return reg


def test_default_is_the_prometheus_text_format(registry: CollectorRegistry) -> None:
    answer = metrics_handler(registry)("/metrics", {}, {})
    assert len(answer) == 4
    status, ctype, body, extra = answer
    assert status == 200 and ctype.startswith("text/plain; version=0.0.4")
    assert b"demo_requests_total 1.0\n" in body and b"# EOF" not in body
    assert extra == (VARY,)
    assert metrics_handler(registry)("/other", {}, {})[0] == 404


def test_openmetrics_when_the_scraper_asks_for_it(registry: CollectorRegistry) -> None:
    accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
    status, ctype, body, *_ = metrics_handler(registry)("/metrics", {}, {"accept": accept})
    assert status == 200 and ctype.startswith(OPENMETRICS)
    assert body.endswith(b"# EOF\n") and b"demo_requests_total 1.0\n" in body


def test_gzip_when_accepted_and_name_filter(registry: CollectorRegistry) -> None:
    handle = metrics_handler(registry)
    plain = handle("/metrics", {}, {})[2]
    answer = handle("/metrics", {}, {"accept-encoding": "deflate, gzip;q=0.9"})
    assert len(answer) == 4
    assert gzip.decompress(answer[2]) == plain
    assert answer[3] == (("Content-Encoding", "gzip"), VARY)
    only = handle("/metrics", {"name[]": ["demo_depth"]}, {})[2]
    assert b"demo_depth 3.0" in only and b"demo_requests" not in only


@pytest.fixture
def served(registry: CollectorRegistry) -> Iterator[tuple[str, int]]:
    server = metrics_server(("127.0.0.1", 0), registry)
    server.start()
    try:
        yield server.address
    finally:
        server.shutdown()


def test_headers_reach_the_wire(served: tuple[str, int]) -> None:
    conn = http.client.HTTPConnection(*served, timeout=10)
    try:
        conn.request("GET", "/metrics", headers={
            "Accept": "application/openmetrics-text; version=1.0.0", "Accept-Encoding": "gzip"})
        resp = conn.getresponse()
        body = resp.read()
    finally:
        conn.close()
    assert resp.status == 200
    assert resp.getheader("Content-Type", "").startswith(OPENMETRICS)
    assert resp.getheader("Content-Encoding") == "gzip"
    assert resp.getheader("Vary") == "Accept, Accept-Encoding"
    assert resp.getheader("Content-Length") == str(len(body))
    assert gzip.decompress(body).endswith(b"# EOF\n")
