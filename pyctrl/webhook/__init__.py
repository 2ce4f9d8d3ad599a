"""pyctrl.webhook: admission webhooks as plain functions, served over HTTPS by a runnable.

A handler takes the ``request`` of an AdmissionReview and returns an
:class:`AdmissionResponse` (:func:`allowed`, :func:`denied`, :func:`patched`);
:class:`WebhookServer` serves handlers by path with certificate reload, per-request
deadlines, a connection cap and a bounded stop, and is added to a Manager with
``manager.add(server)`` plus ``manager.add_readyz_check("webhook", server.check)``.
:class:`Admission` (given with a handler) says how the API server calls it, so
``python -m pyctrl gen webhook`` writes the webhook configurations (:mod:`.configuration`).
:func:`generate_certs` makes a self-signed CA and serving certificate (tests, local runs).
"""

from pyctrl.serving.certs import CertificatePaths, generate_certs
from pyctrl.webhook.admission import (
    REVIEW_API_VERSION,
    AdmissionResponse,
    Handler,
    ReviewError,
    ReviewHandler,
    ServedHandler,
    allowed,
    denied,
    handle_review,
    patched,
    review_request,
    review_response,
)
from pyctrl.webhook.certwatcher import CertificateError, CertWatcher
from pyctrl.webhook.configuration import Admission, ServiceTarget
from pyctrl.webhook.deadline import remaining
from pyctrl.webhook.server import WebhookServer, WebhookServerOptions

__all__ = [
    "REVIEW_API_VERSION",
    "Admission",
    "AdmissionResponse",
    "CertWatcher",
    "CertificateError",
    "CertificatePaths",
    "Handler",
    "ReviewError",
    "ReviewHandler",
    "ServedHandler",
    "ServiceTarget",
    "WebhookServer",
    "WebhookServerOptions",
    "allowed",
    "denied",
    "generate_certs",
    "handle_review",
    "patched",
    "remaining",
    "review_request",
    "review_response",
]
