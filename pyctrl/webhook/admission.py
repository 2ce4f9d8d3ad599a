"""AdmissionReview in, AdmissionReview out: the handler contract of :mod:`pyctrl.webhook`.

Contract:

* A :data:`Handler` is a plain function from the ``request`` of an ``admission.k8s.io/v1``
  AdmissionReview (a dict: ``uid``, ``operation``, ``object``, ``oldObject``, ...) to an
  :class:`AdmissionResponse`. Build responses with :func:`allowed`, :func:`denied` and
  :func:`patched` (controller-runtime's ``Allowed``/``Denied``/``Patched``). A handler may
  raise :class:`ReviewError` for a request it can not read (the server answers HTTP 400);
  anything else it raises is answered with HTTP 500 and logged.
* :func:`review_request` checks the envelope (``apiVersion``, ``kind``, a request with a
  string ``uid``) and returns the request, or raises :class:`ReviewError`.
* A :class:`ReviewHandler` is an object answering a whole review body itself (its
  ``handle_review(review)`` returns the response body): how other review types share the
  server, e.g. the ``apiextensions.k8s.io/v1`` ConversionReview of
  :class:`pyctrl.api.Conversion`. It raises :class:`ReviewError` for a body it can not read.
* :func:`review_response` wraps a response into the AdmissionReview the API server expects,
  echoing the request's ``uid``; :func:`handle_review` is ``review_request`` + handler +
  ``review_response`` (or the ReviewHandler's own ``handle_review``). Fields that are unset
  are omitted, so an allowed response is exactly ``{"uid": ..., "allowed": true}``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, cast, runtime_checkable

import orjson

__all__ = [
    "REVIEW_API_VERSION",
    "AdmissionResponse",
    "Handler",
    "ReviewError",
    "ReviewHandler",
    "ServedHandler",
    "allowed",
    "denied",
    "handle_review",
    "patched",
    "review_request",
    "review_response",
]

REVIEW_API_VERSION = "admission.k8s.io/v1"


class ReviewError(ValueError):
    """The request body is not a usable AdmissionReview."""


@dataclass(frozen=True, slots=True)
class AdmissionResponse:
    """What a handler decided. ``status`` is a ``metav1.Status`` (shown to the user on denial);
    ``patch`` a list of JSON Patch operations (mutation); ``warnings`` are shown by kubectl."""

    allowed: bool
    status: Mapping[str, object] | None = None
    patch: Sequence[Mapping[str, object]] | None = None
    warnings: Sequence[str] = field(default_factory=tuple)


@runtime_checkable
class ReviewHandler(Protocol):
    """Answers a whole review body (request envelope in, response envelope out)."""

    def handle_review(self, review: Mapping[str, object]) -> dict[str, object]:
        """The response body for ``review``; :class:`ReviewError` if it is unreadable."""
        ...


Handler = Callable[[Mapping[str, object]], AdmissionResponse]
ServedHandler = Handler | ReviewHandler
"""What :class:`pyctrl.webhook.WebhookServer` serves at a path: either kind of handler."""


def allowed(*warnings: str) -> AdmissionResponse:
    """Admit the request unchanged."""
    return AdmissionResponse(True, warnings=warnings)


def denied(message: str, *, code: int = 403, reason: str = "Forbidden",
           details: Mapping[str, object] | None = None) -> AdmissionResponse:
    """Reject the request; ``message`` is what ``kubectl`` prints after the webhook's name."""
    status: dict[str, object] = {"status": "Failure", "code": code, "reason": reason,
                                 "message": message}
    if details is not None:
        status["details"] = dict(details)
    return AdmissionResponse(False, status=status)


def patched(operations: Sequence[Mapping[str, object]], *warnings: str) -> AdmissionResponse:
    """Admit the request with a JSON Patch applied (no patch at all when ``operations`` is
    empty, which the API server treats as "unchanged")."""
    return AdmissionResponse(True, patch=list(operations) or None, warnings=warnings)


def review_request(review: Mapping[str, object]) -> Mapping[str, object]:
    """The ``request`` of an AdmissionReview after checking the envelope."""
    if review.get("apiVersion") != REVIEW_API_VERSION or review.get("kind") != "AdmissionReview":
        raise ReviewError(f"expected an {REVIEW_API_VERSION} AdmissionReview")
    request = review.get("request")
    if not isinstance(request, Mapping) or not isinstance(request.get("uid"), str):
        raise ReviewError("the AdmissionReview has no request with a uid")
    return cast(Mapping[str, object], request)


def review_response(uid: str, response: AdmissionResponse) -> dict[str, object]:
    """The AdmissionReview carrying ``response`` for the request ``uid``."""
    body: dict[str, object] = {"uid": uid, "allowed": response.allowed}
    if response.status is not None:
        body["status"] = dict(response.status)
    if response.patch:
        body["patchType"] = "JSONPatch"
        body["patch"] = base64.b64encode(orjson.dumps(list(response.patch))).decode("ascii")
    if response.warnings:
        body["warnings"] = list(response.warnings)
    return {"apiVersion": REVIEW_API_VERSION, "kind": "AdmissionReview", "response": body}


def handle_review(handler: ServedHandler, review: Mapping[str, object]) -> dict[str, object]:
    """Check ``review``, run ``handler`` on its request and wrap the answer."""
    if isinstance(handler, ReviewHandler):
        return handler.handle_review(review)
    request = review_request(review)
    return review_response(cast(str, request["uid"]), handler(request))
