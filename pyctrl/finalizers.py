"""Finalizers: add or remove one by a merge patch guarded by the object's resourceVersion.

Contract (controller-runtime's ``controllerutil.AddFinalizer``/``RemoveFinalizer``, but
written to the server at once):

* :func:`has_finalizer` tells whether ``obj`` lists ``name`` in ``metadata.finalizers``.
* :func:`add_finalizer` / :func:`remove_finalizer` send one JSON merge patch that replaces
  ``metadata.finalizers`` with the list plus/minus ``name`` and carries ``obj``'s
  ``metadata.resourceVersion`` as a precondition: if the object changed since it was read
  (someone else's finalizer may have come or gone), the server answers 409 and
  :class:`pyctrl.errors.Conflict` is raised, so nothing is ever lost; re-read and retry (e.g.
  with :func:`pyctrl.retry_on_conflict`). They return the object the server stored, or
  ``obj`` itself without any API call when there is nothing to change. ``obj`` is never
  modified (it may come from the cache). They need a fresh ``obj``: read it from a lister
  of the Manager (which holds the controller's own earlier writes, read-your-own-writes,
  :mod:`pyctrl.cache.ownwrites`) or from the server, never from a copy kept across writes.
  For typed objects the same two writes are
  :meth:`pyctrl.TypedClient.add_finalizer` / ``remove_finalizer``; :func:`has_finalizer`
  reads either.
"""

from __future__ import annotations

from pyctrl.kube import meta
from pyctrl.kube.interface import Client, Object
from pyctrl.kube.resource import Resource

__all__ = ["add_finalizer", "has_finalizer", "remove_finalizer"]


def has_finalizer(obj: meta.AnyObject, name: str) -> bool:
    """True when ``metadata.finalizers`` of ``obj`` (a raw dict or a typed object) contains
    ``name``."""
    return name in meta.finalizers(obj)


def _patch(client: Client, resource: Resource, obj: Object, finalizers: list[str]) -> Object:
    rv = meta.resource_version(obj)
    if not rv:
        raise ValueError("the object has no metadata.resourceVersion: read it from the server")
    patch = {"metadata": {"finalizers": finalizers, "resourceVersion": rv}}
    return client.patch(resource, meta.name(obj), patch, meta.namespace(obj) or None,
                        patch_type="merge")


def add_finalizer(client: Client, resource: Resource, obj: Object, name: str) -> Object:
    """Add ``name`` to ``obj``'s finalizers on the server (see module docstring)."""
    current = list(meta.finalizers(obj))
    if name in current:
        return obj
    return _patch(client, resource, obj, [*current, name])


def remove_finalizer(client: Client, resource: Resource, obj: Object, name: str) -> Object:
    """Remove ``name`` from ``obj``'s finalizers on the server (see module docstring)."""
    current = list(meta.finalizers(obj))
    if name not in current:
        return obj
    return _patch(client, resource, obj, [f for f in current if f != name])
