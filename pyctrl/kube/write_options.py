"""PatchOptions and DeleteOptions: the options of a PATCH or DELETE, written once.

They mirror apimachinery's ``metav1.PatchOptions`` and ``metav1.DeleteOptions``, as
:mod:`pyctrl.kube.options` does ``ListOptions`` for list and watch.

Contract:

* Every :class:`pyctrl.kube.Client` (the RESTClient, the FencedClient wrapper, the FakeClient)
  takes these options only as keywords after ``namespace``: :class:`PatchArgs` for ``patch``,
  :class:`DeleteArgs` for ``delete``, typed for mypy through ``**kwargs: Unpack[...]``. A
  client turns them into :class:`PatchOptions` / :class:`DeleteOptions` with ``.of(kwargs)``,
  so the defaults and the validation are spelled here only: an unknown keyword raises
  TypeError; an unknown ``patch_type``, ``apply`` without a ``field_manager`` and ``force``
  without ``apply`` raise ValueError, before anything is sent or recorded.
* ``answer="metadata"`` asks only for the patched object's ``apiVersion``, ``kind`` and
  ``metadata`` (``managedFields`` left out), for a caller that reads nothing else of the
  answer (a status write): the RESTClient then decodes no more of the body
  (:func:`pyctrl.kube.body.decode_head`). A client may return the whole object instead (the
  FakeClient does); the default, ``"object"``, is the whole object.
* :meth:`PatchOptions.query` and :meth:`DeleteOptions.body` are what the API server receives
  (query parameters; the ``DeleteOptions`` body), the only place that spells them.
* A test asserts that each ``...Args`` names exactly the fields of its ``...Options`` and that
  every Client has the Protocol's signature.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

__all__ = [
    "PATCH_CONTENT_TYPES",
    "Answer",
    "DeleteArgs",
    "DeleteOptions",
    "PatchArgs",
    "PatchOptions",
    "PatchType",
    "PropagationPolicy",
]

PatchType = Literal["merge", "json", "strategic", "apply"]
PropagationPolicy = Literal["Background", "Foreground", "Orphan"]
Answer = Literal["object", "metadata"]

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",  # JSON is YAML; the server accepts it as such
}


class PatchArgs(TypedDict, total=False):
    """The keywords ``Client.patch`` takes (the fields of :class:`PatchOptions`)."""

    patch_type: PatchType
    field_manager: str | None
    force: bool
    subresource: str | None
    answer: Answer


class DeleteArgs(TypedDict, total=False):
    """The keywords ``Client.delete`` takes (the fields of :class:`DeleteOptions`)."""

    propagation_policy: PropagationPolicy | None
    preconditions: dict[str, str] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PatchOptions:
    """How a PATCH is sent (see module docstring); validated on construction."""

    patch_type: PatchType = "merge"
    field_manager: str | None = None
    force: bool = False
    subresource: str | None = None
    answer: Answer = "object"

    def __post_init__(self) -> None:
        if self.patch_type not in PATCH_CONTENT_TYPES:
            raise ValueError(f"unknown patch type {self.patch_type!r}")
        if self.answer not in ("object", "metadata"):
            raise ValueError(f"unknown answer {self.answer!r}: 'object' or 'metadata'")
        if self.patch_type == "apply" and not self.field_manager:
            raise ValueError("server-side apply needs a field_manager")
        if self.force and self.patch_type != "apply":
            raise ValueError("force is only valid with patch_type='apply'")

    @classmethod
    def of(cls, args: Mapping[str, Any] | None = None) -> PatchOptions:
        """The options a call's keywords ask for (the defaults where unset)."""
        return cls(**args) if args else _DEFAULT_PATCH

    @property
    def content_type(self) -> str:
        return PATCH_CONTENT_TYPES[self.patch_type]

    def query(self) -> dict[str, str]:
        """The query parameters of the PATCH."""
        query: dict[str, str] = {}
        if self.field_manager:
            query["fieldManager"] = self.field_manager
        if self.force:
            query["force"] = "true"
        return query


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOptions:
    """What a DELETE asks for (see module docstring)."""

    propagation_policy: PropagationPolicy | None = None
    preconditions: dict[str, str] | None = None

    @classmethod
    def of(cls, args: Mapping[str, Any] | None = None) -> DeleteOptions:
        """The options a call's keywords ask for (the defaults where unset)."""
        return cls(**args) if args else _DEFAULT_DELETE

    def body(self) -> dict[str, Any]:
        """The ``DeleteOptions`` object sent as the DELETE's body."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if self.propagation_policy is not None:
            body["propagationPolicy"] = self.propagation_policy
        if self.preconditions:
            body["preconditions"] = dict(self.preconditions)
        return body


_DEFAULT_PATCH = PatchOptions()
_DEFAULT_DELETE = DeleteOptions()
