"""Finalizers: reading them here; writing them is :class:`pyctrl.TypedClient`'s.

Contract: :func:`has_finalizer` tells whether ``obj`` (any :class:`pyctrl.Object`, or a raw
dict) lists ``name`` in ``metadata.finalizers``. The two writes
(controller-runtime's ``controllerutil.AddFinalizer``/``RemoveFinalizer``, but sent to the
server at once: one merge patch guarded by the object's resourceVersion) are
:meth:`pyctrl.TypedClient.add_finalizer` and :meth:`~pyctrl.TypedClient.remove_finalizer`,
for typed objects and :class:`pyctrl.Unstructured` alike.
"""

from __future__ import annotations

from pyctrl.kube import meta

__all__ = ["has_finalizer"]


def has_finalizer(obj: meta.AnyObject, name: str) -> bool:
    """True when ``metadata.finalizers`` of ``obj`` contains ``name``."""
    return name in meta.finalizers(obj)
