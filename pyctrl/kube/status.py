"""Build the ``metav1.Status`` bodies (and errors) the API server answers with.

Contract: each ``new_*`` function returns the :class:`pyctrl.errors.ApiError` that
:func:`pyctrl.errors.from_status` maps the server's own Status to, with the same code, reason,
message wording and ``details`` (``name``, ``group``, ``kind`` = the resource plural, as the
server fills them). Fakes (``pyctrl.testing.FakeClient``, fake listers) use these so a test
sees exactly the error a real cluster would raise. apimachinery's ``errors.NewNotFound`` and
friends are the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyctrl.errors import ApiError, FieldCause, from_status
from pyctrl.kube.resource import Resource

__all__ = [
    "new_already_exists",
    "new_bad_request",
    "new_conflict",
    "new_expired",
    "new_internal_error",
    "new_invalid",
    "new_not_found",
    "status_body",
]


def _qualified(resource: Resource) -> str:
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


def status_body(code: int, reason: str, message: str,
                details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A failure ``Status`` dict as the server serializes it."""
    body: dict[str, Any] = {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code,
    }
    if details:
        body["details"] = details
    return body


def _details(resource: Resource, name: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"group": resource.group, "kind": resource.plural}
    if name:
        out["name"] = name
    return out


def new_not_found(resource: Resource, name: str) -> ApiError:
    return from_status(404, status_body(
        404, "NotFound", f'{_qualified(resource)} "{name}" not found', _details(resource, name)))


def new_already_exists(resource: Resource, name: str) -> ApiError:
    return from_status(409, status_body(
        409, "AlreadyExists", f'{_qualified(resource)} "{name}" already exists',
        _details(resource, name)))


def new_conflict(resource: Resource, name: str, why: str | None = None) -> ApiError:
    why = why or (
        "the object has been modified; please apply your changes to the latest version and "
        "try again"
    )
    return from_status(409, status_body(
        409, "Conflict", f'Operation cannot be fulfilled on {_qualified(resource)} "{name}": {why}',
        _details(resource, name)))


def new_expired(message: str) -> ApiError:
    return from_status(410, status_body(410, "Expired", message))


def new_bad_request(message: str) -> ApiError:
    return from_status(400, status_body(400, "BadRequest", message))


def new_internal_error(message: str) -> ApiError:
    return from_status(500, status_body(500, "InternalError", message))


def new_invalid(resource: Resource, name: str, causes: Sequence[FieldCause]) -> ApiError:
    """422 Invalid with field causes, worded like ``Kind "name" is invalid: field: msg``."""
    summary = ", ".join(f"{c.field}: {c.message}" for c in causes)
    details = _details(resource, name)
    details["kind"] = resource.kind
    details["causes"] = [
        {"field": c.field, "reason": c.reason, "message": c.message} for c in causes
    ]
    return from_status(422, status_body(
        422, "Invalid", f'{resource.kind} "{name}" is invalid: {summary}', details))
