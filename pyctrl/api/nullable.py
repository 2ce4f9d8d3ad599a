"""Fields the API server may send as ``null`` though their type says a list, a map or a value.

Contract:

* Go's encoding/json writes ``null`` for a nil slice, map or pointer whose field has no
  ``omitempty`` (an aggregated ClusterRole's ``rules``). ``Nullable[T]`` is ``T`` to a type
  checker and ``T | None`` to msgspec, so such a document decodes instead of failing; the
  class's ``__post_init__`` then puts the field's default in place of the None
  (``msgspec.structs.force_setattr``: nothing has seen the object yet), so what code reads
  is never None: ``role.rules`` is ``()`` after a ``null`` as after an absent field, and
  encodes as absent (the server reads both as nil). The generated models
  (:mod:`pyctrl.models`) do so for exactly the fields the Go types declare so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, TypeVar

__all__ = ["Nullable"]

T = TypeVar("T")

if TYPE_CHECKING:
    Nullable = Annotated[T, "a null decodes as the field's default"]
else:
    class _Nullable:
        """``Nullable[T]`` is ``T | None`` at run time (what msgspec decodes)."""

        def __getitem__(self, tp: object) -> object:
            return tp | None

    Nullable = _Nullable()

