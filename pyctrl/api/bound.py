"""Classes bound to a Resource: one subclass of a base per Resource, carrying its KindInfo.

Contract: :func:`bind` returns the subclass of ``base`` for ``resource`` (named
``Base[apiVersion Kind]``, with ``__kind__`` a built-in :class:`~pyctrl.api.KindInfo` of the
Resource and ``__resource__`` the Resource), the same class on every call, also from threads
asking at once (made under one lock): informers and listers are keyed by the class.
:meth:`pyctrl.api.Unstructured.of` and :meth:`pyctrl.api.PartialObjectMetadata.of` are
built on it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TypeVar

from pyctrl.api.markers import KindInfo
from pyctrl.kube.resource import Resource

__all__ = ["bind"]

B = TypeVar("B", bound=type)

_BOUND: dict[tuple[type, Resource], type] = {}
_LOCK = threading.Lock()


def bind(base: B, resource: Resource, namespace: Mapping[str, object] | None = None) -> B:
    """The subclass of ``base`` bound to ``resource`` (module docstring); ``namespace``:
    extra class attributes (``__slots__`` for a slotted base)."""
    key = (base, resource)
    found = _BOUND.get(key)
    if found is None:
        with _LOCK:
            found = _BOUND.get(key)
            if found is None:
                found = _BOUND[key] = _make(base, resource, namespace or {})
    bound: B = found  # type: ignore[assignment]
    return bound


def _make(base: type, resource: Resource, namespace: Mapping[str, object]) -> type:
    info = KindInfo(group=resource.group, version=resource.version, kind=resource.kind,
                    plural=resource.plural, singular=resource.kind.lower(),
                    list_kind=f"{resource.kind}List",
                    scope="Namespaced" if resource.namespaced else "Cluster", builtin=True)
    name = f"{base.__name__}[{resource.api_version} {resource.kind}]"
    # type() picks the base's metaclass (msgspec's for a Struct), as a class statement would.
    return type(name, (base,), {**namespace, "__kind__": info, "__resource__": resource,
                                "__module__": base.__module__, "__qualname__": name})
