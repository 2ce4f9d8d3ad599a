"""Secure /metrics: an authentication + authorization filter.

Contract (controller-runtime's ``filters.WithAuthenticationAndAuthorization``, as kubebuilder
scaffolds it since v4):

* :class:`MetricsAuth` decides one request from its path and ``Authorization`` header:
  no ``Bearer`` token -> 401; the token is checked with a TokenReview
  (``authentication.k8s.io/v1``): not authenticated, or the review failed -> 401; the user it
  names must be allowed ``get`` on the nonResourceURL (the request path) by a
  SubjectAccessReview (``authorization.k8s.io/v1``): denied -> 403, the review failed -> 500.
  Allowed -> ``None`` (serve the request).
* Decisions (allowed, 401 not authenticated, 403 denied) are cached for ``ttl`` seconds (by the
  injected clock) per (SHA-256 of the token, path), so a scraper costs two API calls per token
  and path every ``ttl``, not per scrape. Failed reviews (API errors) are never cached. The
  cache holds at most ``max_entries`` decisions (expired ones go first, then the oldest). The
  token itself is never stored or logged.

The server's TLS context comes from :func:`pyctrl.serving.certs.serving_context`.
"""

from __future__ import annotations

import hashlib
import threading

import structlog

from pyctrl.clock import Clock, RealClock
from pyctrl.kube.interface import Client, Object
from pyctrl.kube.resource import Resource
from pyctrl.serving.http import TEXT as _TEXT
from pyctrl.serving.http import Response

__all__ = ["SUBJECT_ACCESS_REVIEWS", "TOKEN_REVIEWS", "MetricsAuth"]

log = structlog.get_logger(__name__)

TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview",
                         namespaced=False)
SUBJECT_ACCESS_REVIEWS = Resource("authorization.k8s.io", "v1", "subjectaccessreviews",
                                  "SubjectAccessReview", namespaced=False)

Denial = Response  # the response that refuses a request


def _deny(status: int, message: str) -> Denial:
    return status, _TEXT, (message + "\n").encode()


class MetricsAuth:
    """Bearer token -> TokenReview -> SubjectAccessReview, with a short decision cache."""

    def __init__(self, client: Client, *, clock: Clock | None = None, ttl: float = 10.0,
                 verb: str = "get", max_entries: int = 1024) -> None:
        if ttl < 0 or max_entries < 1:
            raise ValueError("need ttl >= 0 and max_entries >= 1")
        self._client = client
        self._clock: Clock = clock or RealClock()
        self._ttl = ttl
        self._verb = verb
        self._max = max_entries
        self._mu = threading.Lock()
        # (token sha256, path) -> (expires at, decision; None = allowed)
        self._cache: dict[tuple[str, str], tuple[float, Denial | None]] = {}

    def __call__(self, path: str, authorization: str | None) -> Denial | None:
        """None to serve the request, else the response that refuses it."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return _deny(401, "Unauthorized")
        key = (hashlib.sha256(token.encode()).hexdigest(), path)
        now = self._clock.monotonic()
        with self._mu:
            hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        decision, cacheable = self._review(token, path)
        if cacheable:
            self._remember(key, now + self._ttl, decision)
        return decision

    def _remember(self, key: tuple[str, str], expires: float, decision: Denial | None) -> None:
        with self._mu:
            if key not in self._cache and len(self._cache) >= self._max:
                now = self._clock.monotonic()
                for k in [k for k, (exp, _) in self._cache.items() if exp <= now]:
                    del self._cache[k]
                while len(self._cache) >= self._max:
                    del self._cache[next(iter(self._cache))]
            self._cache[key] = (expires, decision)

    def _review(self, token: str, path: str) -> tuple[Denial | None, bool]:
        """The decision, and whether it may be cached (not when a review failed)."""
        try:
            review = self._client.create(TOKEN_REVIEWS, {
                "apiVersion": TOKEN_REVIEWS.api_version, "kind": TOKEN_REVIEWS.kind,
                "spec": {"token": token},
            })
        except Exception as err:  # the API server's answer or a transport failure
            log.warning("metrics authentication failed", error=str(err))
            return _deny(401, "Authentication failed"), False
        status = review.get("status") or {}
        if not status.get("authenticated"):
            return _deny(401, "Unauthorized"), True
        user: Object = status.get("user") or {}
        name = str(user.get("username") or "")
        spec: Object = {"user": name, "groups": list(user.get("groups") or []),
                        "nonResourceAttributes": {"path": path, "verb": self._verb}}
        if user.get("uid"):
            spec["uid"] = user["uid"]
        if user.get("extra"):
            spec["extra"] = user["extra"]
        try:
            sar = self._client.create(SUBJECT_ACCESS_REVIEWS, {
                "apiVersion": SUBJECT_ACCESS_REVIEWS.api_version,
                "kind": SUBJECT_ACCESS_REVIEWS.kind, "spec": spec,
            })
        except Exception as err:
            log.warning("metrics authorization failed", user=name, error=str(err))
            return _deny(500, f"Authorization for user {name} failed"), False
        if not (sar.get("status") or {}).get("allowed"):
            log.debug("metrics access denied", user=name, path=path,
                      reason=(sar.get("status") or {}).get("reason"))
            return _deny(403, f"Authorization denied for user {name}"), True
        return None, True
