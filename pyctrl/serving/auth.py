"""Secure /metrics: an authentication + authorization filter on a budget of its own.

Contract (controller-runtime's ``filters.WithAuthenticationAndAuthorization``, as kubebuilder
scaffolds it since v4):

* :class:`MetricsAuth` decides one request from its path and ``Authorization`` header:
  no ``Bearer`` token -> 401; the token is checked with a TokenReview
  (``authentication.k8s.io/v1``): not authenticated, or the review failed -> 401; the user it
  names must be allowed ``get`` on the nonResourceURL (the request path) by a
  SubjectAccessReview (``authorization.k8s.io/v1``): denied -> 403, the review failed -> 500.
  Allowed -> ``None`` (serve the request).
* Decisions are cached per (SHA-256 of the token, path), by the injected clock: an allowed
  one for ``ttl`` seconds (at most ``max_entries``), a refusal (401 not authenticated, 403
  denied) for ``negative_ttl`` seconds in a cache of its own (at most ``max_negative``), so a
  flood of bad tokens never evicts a good scraper's entry. A full cache drops expired entries
  first, then the oldest. Failed reviews (API errors) and 429s are never cached. A scraper
  costs two API calls per token and path every ``ttl``, not per scrape. The token itself is
  never stored or logged.
* Known tokens: a token allowed once is *known* (by its SHA-256, at most ``max_entries``,
  oldest dropped first) for ``known_ttl`` seconds after its last allowed review. Its decision
  still expires after ``ttl`` (so a revoked token or a withdrawn permission is honoured
  within ``ttl``; a refusal forgets it at once), but its reviews draw from a bucket of their
  own (``known_qps``, ``known_burst``; the shared one only when that is empty), so a flood
  of bad tokens spending the shared budget never blinds a scraper that was allowed before.
  A random token can not become known without passing both reviews.
* The API budget is bounded: every review call (TokenReview, then SubjectAccessReview) takes a
  token from a bucket of ``review_burst`` tokens refilled at ``review_qps`` per second (by the
  clock; ``review_qps <= 0``: no bound; known tokens first use theirs, above). With none
  left the request is answered 429 at once,
  without an API call and without waiting. Give it a client of its own (the Manager does:
  ``MetricsOptions.auth_qps``/``auth_burst`` set this bucket, and that client's rate limit
  to the sum of both buckets), so a flood of random tokens spends neither the controller's
  client-side rate limit nor more than ``review_qps`` of the API server's attention.
* The log stays small under a flood, as under an outage (:mod:`pyctrl._errorlog`, one line
  per interval of 10 s per kind, the next line counting the rest in ``suppressed``):
  refusals (401, 403, 429, cached or not) as ``metrics requests refused`` (info; one kind
  per status), failed reviews as ``metrics authentication failed`` / ``metrics
  authorization failed`` (warning; a kind per error class and status).

The server's TLS context comes from :func:`pyctrl.serving.certs.serving_context`.
"""

from __future__ import annotations

import hashlib
import threading

import structlog

from pyctrl._errorlog import ErrorLog
from pyctrl.clock import Clock, RealClock
from pyctrl.kube.interface import Client, RawObject
from pyctrl.kube.ratelimit import TokenBucketRateLimiter
from pyctrl.kube.resource import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS
from pyctrl.serving.http import TEXT as _TEXT
from pyctrl.serving.http import Response

__all__ = ["KNOWN_BURST", "KNOWN_QPS", "MetricsAuth"]

log = structlog.get_logger(__name__)

Denial = Response  # the response that refuses a request

KNOWN_TTL = 600.0  # how long a token allowed once keeps its own review budget
# Known tokens' own budget: a few scrapers (an HA Prometheus pair, an agent) re-reviewed every
# ttl (10 s), two calls each, need well under one call a second.
KNOWN_QPS = 2.0
KNOWN_BURST = 4


def _deny(status: int, message: str) -> Denial:
    return status, _TEXT, (message + "\n").encode()


class _Decisions:
    """A bounded map key -> (expires at, decision): expired entries go first, then the oldest."""

    def __init__(self, ttl: float, max_entries: int) -> None:
        self.ttl = ttl
        self._max = max_entries
        self._entries: dict[tuple[str, str], tuple[float, Denial | None]] = {}

    def get(self, key: tuple[str, str], now: float) -> tuple[bool, Denial | None]:
        hit = self._entries.get(key)
        return (True, hit[1]) if hit is not None and hit[0] > now else (False, None)

    def put(self, key: tuple[str, str], now: float, decision: Denial | None) -> None:
        if key not in self._entries and len(self._entries) >= self._max:
            for k in [k for k, (exp, _) in self._entries.items() if exp <= now]:
                del self._entries[k]
            while len(self._entries) >= self._max:
                del self._entries[next(iter(self._entries))]
        self._entries.pop(key, None)  # re-inserted last: the newest
        self._entries[key] = (now + self.ttl, decision)

    def __len__(self) -> int:
        return len(self._entries)


class MetricsAuth:
    """Bearer token -> TokenReview -> SubjectAccessReview, cached, on a bounded budget."""

    def __init__(self, client: Client, *, clock: Clock | None = None, ttl: float = 10.0,
                 negative_ttl: float = 10.0, verb: str = "get", max_entries: int = 1024,
                 max_negative: int = 4096, review_qps: float = 5.0,
                 review_burst: int = 10, known_ttl: float = KNOWN_TTL,
                 known_qps: float = KNOWN_QPS, known_burst: int = KNOWN_BURST) -> None:
        if (ttl < 0 or negative_ttl < 0 or known_ttl < 0 or max_entries < 1
                or max_negative < 1):
            raise ValueError("need ttl, negative_ttl, known_ttl >= 0 and max_entries, "
                             "max_negative >= 1")
        if review_qps > 0 and review_burst < 1:
            raise ValueError("review_burst must be >= 1 when review_qps > 0")
        if known_qps > 0 and known_burst < 1:
            raise ValueError("known_burst must be >= 1 when known_qps > 0")
        self._client = client
        self._clock: Clock = clock or RealClock()
        self._verb = verb
        self._mu = threading.Lock()
        self._allowed = _Decisions(ttl, max_entries)
        self._refused = _Decisions(negative_ttl, max_negative)
        self._budget = TokenBucketRateLimiter(review_qps, review_burst, clock=self._clock)
        self._known_budget = TokenBucketRateLimiter(known_qps, known_burst, clock=self._clock)
        self._known_ttl = known_ttl
        self._max_known = max_entries
        self._known: dict[str, float] = {}  # token hash -> known until
        self._errors = ErrorLog(log, self._clock, burst=1)  # a flood: a line per interval

    def cached(self) -> tuple[int, int]:
        """How many allowed and refused decisions are cached (for tests and debugging)."""
        with self._mu:
            return len(self._allowed), len(self._refused)

    def known(self) -> int:
        """How many tokens are known now (see the module docstring)."""
        now = self._clock.monotonic()
        with self._mu:
            return sum(1 for until in self._known.values() if until > now)

    def __call__(self, path: str, authorization: str | None) -> Denial | None:
        """None to serve the request, else the response that refuses it."""
        decision, failed = self._decide(path, authorization)
        if decision is not None and not failed:
            self._errors.event("metrics requests refused", key=str(decision[0]),
                               status=decision[0], path=path,
                               message=decision[2].decode().strip())
        return decision

    def _decide(self, path: str, authorization: str | None) -> tuple[Denial | None, bool]:
        """The decision, and whether it is a failed review's (logged already)."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return _deny(401, "Unauthorized"), False
        digest = hashlib.sha256(token.encode()).hexdigest()
        key = (digest, path)
        now = self._clock.monotonic()
        with self._mu:
            for cache in (self._allowed, self._refused):
                found, decision = cache.get(key, now)
                if found:
                    return decision, False
            known = self._known.get(digest, 0.0) > now
        decision, cacheable = self._review(token, path, known)
        if cacheable:
            with self._mu:
                (self._allowed if decision is None else self._refused).put(key, now, decision)
                self._known.pop(digest, None)  # re-inserted last when allowed: the newest
                if decision is None:
                    self._remember(digest, now)
        return decision, not cacheable and decision is not None and decision[0] != 429

    def _remember(self, digest: str, now: float) -> None:
        if len(self._known) >= self._max_known:
            for k in [k for k, until in self._known.items() if until <= now]:
                del self._known[k]
            while len(self._known) >= self._max_known:
                del self._known[next(iter(self._known))]
        self._known[digest] = now + self._known_ttl

    def _take(self, known: bool) -> bool:
        """A review call's token: a known token's bucket first, else the shared one."""
        return (known and self._known_budget.try_accept()) or self._budget.try_accept()

    def _review(self, token: str, path: str, known: bool) -> tuple[Denial | None, bool]:
        """The decision, and whether it may be cached (not when a review failed or the
        budget was spent)."""
        if not self._take(known):
            return _deny(429, "Too many authentication requests; retry later"), False
        try:
            review = self._client.create(TOKEN_REVIEWS, {
                "apiVersion": TOKEN_REVIEWS.api_version, "kind": TOKEN_REVIEWS.kind,
                "spec": {"token": token},
            })
        except Exception as err:  # the API server's answer or a transport failure
            self._errors.failure("metrics authentication failed", err, level="warning")
            return _deny(401, "Authentication failed"), False
        status = review.get("status") or {}
        if not status.get("authenticated"):
            return _deny(401, "Unauthorized"), True
        user: RawObject = status.get("user") or {}
        name = str(user.get("username") or "")
        spec: RawObject = {"user": name, "groups": list(user.get("groups") or []),
                        "nonResourceAttributes": {"path": path, "verb": self._verb}}
        if user.get("uid"):
            spec["uid"] = user["uid"]
        if user.get("extra"):
            spec["extra"] = user["extra"]
        if not self._take(known):
            return _deny(429, "Too many authorization requests; retry later"), False
        try:
            sar = self._client.create(SUBJECT_ACCESS_REVIEWS, {
                "apiVersion": SUBJECT_ACCESS_REVIEWS.api_version,
                "kind": SUBJECT_ACCESS_REVIEWS.kind, "spec": spec,
            })
        except Exception as err:
            self._errors.failure("metrics authorization failed", err, level="warning",
                                 user=name)
            return _deny(500, f"Authorization for user {name} failed"), False
        if not (sar.get("status") or {}).get("allowed"):
            return _deny(403, f"Authorization denied for user {name}"), True
        return None, True
