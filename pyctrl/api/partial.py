"""PartialObjectMetadata: the lean, typed form of a metadata-only informer's objects.

Contract (controller-runtime's ``metav1.PartialObjectMetadata`` with its GVK set):

* :class:`PartialObjectMetadata` is a :class:`pyctrl.api.Object` with nothing but
  ``apiVersion``, ``kind`` and a typed ``metadata``, so it satisfies ``pyctrl.Object``
  and every helper reads it as it reads a full kind (keys, indexes, owner references,
  handlers, predicates on labels and generation, events).
* ``PartialObjectMetadata.of(R)`` is the class bound to a :class:`pyctrl.kube.Resource`
  (one per Resource, carrying the kind's :class:`~pyctrl.api.KindInfo`). Given to
  ``informer_for``/``lister_for``, ``synced_lister`` or the Builder (``owns``,
  ``watches``, ``for_``) it makes a metadata-only informer: LIST and WATCH ask for
  ``PartialObjectMetadata``, the bytes decode straight into the class (no dict), and each
  cached object carries the Resource's apiVersion and kind, not ``meta.k8s.io/v1``
  ``PartialObjectMetadata``. A server that sends full objects (it cannot convert) has them
  reduced to the metadata by the decoder. The unbound class has no Resource: those calls
  refuse it (:class:`pyctrl.api.SchemaError`).
* Writes: it is a read form. To change an object, patch it through
  :class:`pyctrl.TypedClient` by name, or read the full kind.
"""

from __future__ import annotations

from typing import ClassVar

from pyctrl.api.bound import bind
from pyctrl.api.types import Object
from pyctrl.kube.resource import Resource

__all__ = ["PartialObjectMetadata"]


class PartialObjectMetadata(Object, kw_only=True):
    """``apiVersion``, ``kind`` and typed ``metadata`` only (module docstring)."""

    __resource__: ClassVar[Resource | None] = None
    __metadata_only__: ClassVar[bool] = True

    @classmethod
    def of(cls, resource: Resource) -> type[PartialObjectMetadata]:
        """The class bound to ``resource`` (one per Resource; module docstring)."""
        return bind(PartialObjectMetadata, resource)
