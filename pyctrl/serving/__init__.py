"""pyctrl.serving: what a controller serves besides its work, in one place.

* :mod:`~pyctrl.serving.http`: :class:`HTTPServerThread`, one small HTTP(S) server (probes,
  /metrics) on the event-loop front end of :mod:`pyctrl.frontend`, so idle clients cost no
  thread, and :func:`parse_bind_address`.
* :mod:`~pyctrl.serving.healthz`: :class:`Checks`, the ``/healthz`` and ``/readyz`` endpoints.
* :mod:`~pyctrl.serving.metrics`: :func:`metrics_handler` (``/metrics``; metric families once
  per registry are :func:`pyctrl.collectors.per_registry`'s, in the bottom layer).
* :mod:`~pyctrl.serving.auth`: :class:`MetricsAuth`, TokenReview + SubjectAccessReview in
  front of /metrics.
* :mod:`~pyctrl.serving.gcmetrics`: :func:`gc_pause_histogram`, the GC pause histogram.
* :mod:`~pyctrl.serving.certs`: the one certificate helper (CA, leaf certificates, a
  self-signed serving certificate, :func:`serving_context` for TLS servers).

Layering: above :mod:`pyctrl.kube` (``auth`` uses its client protocol) and
:mod:`pyctrl.frontend`; nothing below imports it. The webhook server (:mod:`pyctrl.webhook`)
takes its certificates from here.
"""

from pyctrl.serving.auth import MetricsAuth
from pyctrl.serving.certs import (
    CertificatePaths,
    generate_certs,
    issue_cert,
    new_ca,
    self_signed_cert,
    serving_context,
)
from pyctrl.serving.gcmetrics import GC_PAUSE_BUCKETS, gc_pause_histogram
from pyctrl.serving.healthz import Check, Checks
from pyctrl.serving.http import Authorizer, Handler, HTTPServerThread, Response, parse_bind_address
from pyctrl.serving.metrics import metrics_handler

__all__ = [
    "GC_PAUSE_BUCKETS",
    "Authorizer",
    "CertificatePaths",
    "Check",
    "Checks",
    "HTTPServerThread",
    "Handler",
    "MetricsAuth",
    "Response",
    "gc_pause_histogram",
    "generate_certs",
    "issue_cert",
    "metrics_handler",
    "new_ca",
    "parse_bind_address",
    "self_signed_cert",
    "serving_context",
]
