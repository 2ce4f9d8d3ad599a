"""Where a REST client request goes: the resource path, its query string and its namespace.

Contract:

* :func:`resource_path` is :meth:`pyctrl.kube.Resource.path` (the collection, or one object
  with ``name``, or its ``subresource``) with the namespace, name and subresource each
  percent-quoted as one path segment (``/`` included: ``a/b`` can not reach another path),
  followed by ``?`` and the URL-encoded ``query`` when one is given. The server URL is not
  part of it (:meth:`pyctrl.kube.RESTClient.url` prefixes it).
* :func:`request_scope` is the namespace a call on ``resource`` uses: None for a
  cluster-scoped resource (a namespace passed is ignored); else ``namespace``, or the
  namespace in ``obj``'s metadata, or None when neither is set and a namespace is not
  ``required`` (a list or watch across namespaces). A namespaced call that requires one and
  has none raises :class:`ValueError`.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

from pyctrl.kube.interface import RawObject
from pyctrl.kube.resource import Resource

__all__ = ["request_scope", "resource_path"]


def _q(part: str) -> str:
    return quote(part, safe="")


def resource_path(resource: Resource, namespace: str | None = None, name: str | None = None,
                  subresource: str | None = None, query: dict[str, str] | None = None) -> str:
    """The resource path and its query string (module docstring)."""
    path = resource.path(
        _q(namespace) if namespace else None,
        _q(name) if name is not None else None,
        _q(subresource) if subresource else None,
    )
    return f"{path}?{urlencode(query)}" if query else path


def request_scope(resource: Resource, namespace: str | None, obj: RawObject | None = None,
                  required: bool = True) -> str | None:
    """The namespace a call on ``resource`` uses (module docstring)."""
    if not resource.namespaced:
        return None
    ns = namespace or ((obj or {}).get("metadata") or {}).get("namespace")
    if required and not ns:
        raise ValueError(f"{resource} is namespaced: a namespace is required")
    return str(ns) if ns else None
