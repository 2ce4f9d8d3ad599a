"""Typed errors for Kubernetes API failures.

Contract: every failed API call made through :mod:`pyctrl.kube` raises an :class:`ApiError`
subclass chosen by HTTP status code and, where the code is ambiguous, the ``reason`` of the
``metav1.Status`` body the server sent. Each error carries that Status' ``reason``,
``message``, ``code`` and ``details`` so callers never parse strings. ``from_status`` is the
single mapping function; ``pyctrl.kube`` and the fakes in ``pyctrl.testing`` both use it, so a
fake can never disagree with the real client about which error a Status means.

:class:`TerminalError` is not an API answer: a reconciler says retrying will not help. Its
subclasses: :class:`NotLeader` (a leader-scoped client refused a write locally because the
leader lease can no longer be trusted; the request was never sent), :class:`AlreadyOwned`
(:func:`pyctrl.set_controller_reference` or an apply refused to take an object another
controller owns; it carries that controller's reference) and its subclass
:class:`AdoptionRefused` (an apply refused to take over an existing object no controller
owns).

:class:`Undecodable` is not an API answer: a typed lister's ``get`` found the object stored in
the cache only as a stand-in, because it does not decode into its kind (see
:mod:`pyctrl.cache.quarantine`). It is a :class:`TerminalError`: a reconciler that lets it
escape is not retried hot (the object's next change brings the key back).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AdoptionRefused",
    "AlreadyExists",
    "AlreadyOwned",
    "ApiError",
    "BadRequest",
    "Conflict",
    "FieldCause",
    "Forbidden",
    "Gone",
    "Invalid",
    "MethodNotAllowed",
    "NotFound",
    "NotLeader",
    "ServerError",
    "ServerTimeout",
    "TerminalError",
    "Timeout",
    "TooManyRequests",
    "Unauthorized",
    "Undecodable",
    "Unreachable",
    "from_status",
    "is_not_found",
]


@dataclass(frozen=True)
class FieldCause:
    """One entry of ``Status.details.causes``: which field is wrong and why."""

    field: str
    reason: str
    message: str


@dataclass
class ApiError(Exception):
    """A non-2xx answer from the API server (or a failure to get one)."""

    message: str
    code: int = 0
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        parts = [f"{type(self).__name__}"]
        if self.code:
            parts.append(f"({self.code}{' ' + self.reason if self.reason else ''})")
        return f"{' '.join(parts)}: {self.message}"

    @property
    def causes(self) -> list[FieldCause]:
        """Field-level causes from ``details.causes`` (empty when the server gave none)."""
        out: list[FieldCause] = []
        for cause in self.details.get("causes") or []:
            if isinstance(cause, dict):
                out.append(
                    FieldCause(
                        field=str(cause.get("field", "")),
                        reason=str(cause.get("reason", "")),
                        message=str(cause.get("message", "")),
                    )
                )
        return out


class BadRequest(ApiError):
    """400: the request was malformed."""


class Unauthorized(ApiError):
    """401: no or bad credentials."""


class Forbidden(ApiError):
    """403: authenticated but not allowed (RBAC, admission)."""


class NotFound(ApiError):
    """404: the object (or the resource type) does not exist."""


class MethodNotAllowed(ApiError):
    """405: the verb is not supported on this resource."""


class AlreadyExists(ApiError):
    """409 with reason AlreadyExists: a create hit an existing name."""


class Conflict(ApiError):
    """409: an optimistic-concurrency (resourceVersion) or precondition conflict."""


class Gone(ApiError):
    """410: the requested resourceVersion is too old (compacted); relist."""


class Invalid(ApiError):
    """422: the object failed validation; see :attr:`causes`."""


@dataclass
class TooManyRequests(ApiError):
    """429: throttled by API priority and fairness or max-in-flight."""

    retry_after: float | None = None


class ServerError(ApiError):
    """5xx (other than 504): the server failed."""


class ServerTimeout(ApiError):
    """504 or reason ServerTimeout/Timeout from the server."""


class Timeout(ApiError):
    """The client gave up: connect or read timeout, no answer from the server."""


class Unreachable(ApiError):
    """The server could not be reached at all (connection refused or reset, DNS)."""


class TerminalError(Exception):
    """Raised by a reconciler to say retrying will not help: logged and counted, not requeued."""


class AlreadyOwned(TerminalError):
    """The object already has another controller (controller-runtime's AlreadyOwnedError):
    ``owner`` is that controller's owner reference (``apiVersion``, ``kind``, ``name``,
    ``uid``), or None for an object that exists with no controller at all
    (:class:`AdoptionRefused`); ``object_name`` is the object's name. ``claimant`` is the
    controller reference that was refused (who asked), when known, and ``namespace`` the
    object's namespace ("" for a cluster-scoped one).

    It is a :class:`TerminalError`: uncaught, it ends the reconcile without a retry (the
    Controller records a Warning Event on the claimant when it has a recorder); retrying
    cannot help until a person settles who owns the object.
    """

    def __init__(self, object_name: str, owner: dict[str, Any] | None = None, *,
                 claimant: dict[str, Any] | None = None, namespace: str = "",
                 kind: str = "") -> None:
        what = f"{kind} {object_name!r}" if kind else repr(object_name)
        where = f" (namespace {namespace!r})" if namespace else ""
        super().__init__(self._describe(what, owner, claimant) + where)
        self.object_name = object_name
        self.owner = owner
        self.claimant = claimant
        self.namespace = namespace
        self.kind = kind

    @staticmethod
    def _describe(what: str, owner: dict[str, Any] | None,
                  claimant: dict[str, Any] | None) -> str:
        if owner is not None:
            return f"{what} is already controlled by {owner.get('kind')} {owner.get('name')!r}"
        return f"{what} exists and is not controlled by this owner"


class AdoptionRefused(AlreadyOwned):
    """An existing object that no controller controls (a user's own, say) was not taken over:
    making a controller its owner would let the garbage collector delete it with that owner.
    Pass ``adopt=True`` to the write to take it over on purpose. ``owner`` is None."""

    @staticmethod
    def _describe(what: str, owner: dict[str, Any] | None,
                  claimant: dict[str, Any] | None) -> str:
        by = (f" by {claimant.get('kind')} {claimant.get('name')!r}"
              if claimant is not None else "")
        return (f"{what} exists and has no controller: refusing to adopt it{by} (the garbage "
                "collector would delete it with its owner; pass adopt=True to take it over)")


class NotLeader(TerminalError):
    """A leader-scoped write was refused before it was sent: this replica can no longer trust
    its leader lease (not renewed within the renew deadline, lost, or released).

    It is not an :class:`ApiError` (the API server never saw the request) and it is terminal,
    so a reconcile stops at its first refused write and the key is not retried hot; the
    replica that leads now reconciles it.
    """


class Undecodable(TerminalError):
    """The cached object ``namespace/name`` of ``kind`` does not decode into its class.

    ``path`` is where the first mismatch is (``$.spec.concurrencyPolicy``; ``$`` the object),
    ``problem`` what is wrong there (msgspec's message, e.g. ``Invalid enum value
    'Sometimes'``); ``resource_version``, ``uid`` and ``generation`` are the stored object's.
    """

    def __init__(self, *, kind: str, namespace: str, name: str, path: str, problem: str,
                 resource_version: str = "", uid: str = "", generation: int = 0,
                 api_version: str = "") -> None:
        where = f"{namespace}/{name}" if namespace else name
        super().__init__(f"{kind} {where} does not decode: {problem} at {path}")
        self.kind = kind
        self.api_version = api_version
        self.namespace = namespace
        self.name = name
        self.path = path
        self.problem = problem
        self.resource_version = resource_version
        self.uid = uid
        self.generation = generation

    @property
    def field(self) -> str:
        """``path`` without its leading ``$.`` (``spec.concurrencyPolicy``)."""
        return self.path.removeprefix("$").removeprefix(".")


def is_not_found(err: BaseException) -> bool:
    """True when ``err`` is a :class:`NotFound`."""
    return isinstance(err, NotFound)


def _retry_after(details: dict[str, Any], header: str | None) -> float | None:
    if header:
        try:
            return max(0.0, float(header))
        except ValueError:
            pass
    seconds = details.get("retryAfterSeconds")
    if isinstance(seconds, int | float):
        return float(seconds)
    return None


def from_status(
    code: int, status: dict[str, Any] | None, *, retry_after_header: str | None = None
) -> ApiError:
    """Build the right :class:`ApiError` for an HTTP ``code`` and a decoded Status body.

    ``status`` may be None or not a Status (e.g. an HTML error page); the error then carries
    a generic message with the code.
    """
    body = status if isinstance(status, dict) else {}
    reason = str(body.get("reason") or "")
    message = str(body.get("message") or f"the server answered HTTP {code}")
    raw_details = body.get("details")
    details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
    if code == 429 or reason == "TooManyRequests":
        return TooManyRequests(
            message, code, reason, details, retry_after=_retry_after(details, retry_after_header)
        )
    kind: type[ApiError]
    if code == 409:
        kind = AlreadyExists if reason == "AlreadyExists" else Conflict
    elif reason == "Expired" or code == 410:
        kind = Gone
    else:
        kind = {
            400: BadRequest,
            401: Unauthorized,
            403: Forbidden,
            404: NotFound,
            405: MethodNotAllowed,
            422: Invalid,
            504: ServerTimeout,
        }.get(code, ServerError if code >= 500 else ApiError)
        if reason in ("ServerTimeout", "Timeout") and code >= 500:
            kind = ServerTimeout
    return kind(message, code, reason, details)
