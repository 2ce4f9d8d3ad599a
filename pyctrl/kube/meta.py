"""Object-metadata accessors every layer shares (apimachinery's ``metav1`` helpers).

Contract: :func:`controller_of` is the one walk over ``metadata.ownerReferences``: it returns
the first owner reference with ``controller: true`` (an object has at most one, as
``metav1.GetControllerOf`` assumes), or None. It reads defensively: a missing or malformed
``metadata``/``ownerReferences``, and entries that are not mappings, count as no controller,
so a handler or index fed a half-formed object never raises. It never copies or mutates:
the reference returned is the object's own (read-only for cached objects).

It lives in ``pyctrl.kube`` (the lowest layer) so ``pyctrl.cache`` (the controller-UID index),
the handlers and :mod:`pyctrl.ownerrefs` (the public helper) all use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["controller_of"]


def controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The owner reference of ``obj`` with ``controller: true``, or None."""
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, dict) and ref.get("controller") is True:
            found: dict[str, Any] = ref
            return found
    return None
