"""REST client request metrics, named as client-go names them.

Contract: :func:`request_metrics` returns the collectors for one
``prometheus_client.CollectorRegistry``, registering them on first use and sharing them with
every later :class:`pyctrl.kube.RESTClient` on the same registry (a registry refuses duplicate
names, and several clients in one process is normal). Series:

* ``rest_client_requests_total{code, method, host}``: finished requests by HTTP status code
  (``"<error>"`` when no response arrived), HTTP method and ``host:port``.
* ``rest_client_request_duration_seconds{verb, host}``: latency until the response headers
  (for a WATCH: until the stream opened), with client-go's exponential buckets.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram

from pyctrl.collectors import per_registry

__all__ = ["RequestMetrics", "request_metrics"]

# client-go: prometheus.ExponentialBuckets(0.001, 2, 15) for request latency.
_BUCKETS = tuple(0.001 * 2**i for i in range(15))


@dataclass(frozen=True)
class RequestMetrics:
    """The two request collectors of one registry."""

    requests: Counter
    duration: Histogram

    def observe(self, *, method: str, host: str, code: str, seconds: float) -> None:
        self.requests.labels(code=code, method=method, host=host).inc()
        self.duration.labels(verb=method, host=host).observe(seconds)


def _new_request_metrics(registry: CollectorRegistry | None) -> RequestMetrics:
    return RequestMetrics(
        requests=Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=registry,
        ),
        duration=Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb and host.",
            ["verb", "host"],
            buckets=_BUCKETS,
            registry=registry,
        ),
    )


_request_metrics = per_registry(_new_request_metrics)


def request_metrics(registry: CollectorRegistry) -> RequestMetrics:
    """The shared :class:`RequestMetrics` for ``registry`` (registered on first call)."""
    return _request_metrics(registry)
