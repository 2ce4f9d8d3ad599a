"""Deprecated names: keep an old public name working for one release, and say so once.

Contract:

* :func:`warn_once` emits one :class:`DeprecationWarning` per distinct ``what`` per process
  (later calls are silent; the warning filters still decide whether it is shown).
* :func:`alias_getattr` builds a module ``__getattr__`` that serves old names as aliases of
  new objects: the first access of each old name warns (``old is deprecated; use new``), every
  access returns the new object, and unknown names raise AttributeError as usual. Old names
  stay out of the module's ``__all__`` (star imports do not warn).

README's MIGRATION table lists every alias made here.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping

__all__ = ["alias_getattr", "warn_once"]

_warned: set[str] = set()
_lock = threading.Lock()


def warn_once(what: str, message: str, *, stacklevel: int = 2) -> None:
    """Warn ``message`` (DeprecationWarning) the first time ``what`` is reported."""
    with _lock:
        if what in _warned:
            return
        _warned.add(what)
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel + 1)


def alias_getattr(module: str, aliases: Mapping[str, tuple[object, str]]
                  ) -> Callable[[str], object]:
    """A module ``__getattr__`` serving ``aliases`` (old name -> (object, new name))."""

    def module_getattr(name: str) -> object:
        try:
            obj, new = aliases[name]
        except KeyError:
            raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
        warn_once(f"{module}.{name}", f"{module}.{name} is deprecated; use {new}",
                  stacklevel=2)
        return obj

    return module_getattr
