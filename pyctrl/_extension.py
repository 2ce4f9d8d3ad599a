"""Extensions: add-ons that install themselves on a Manager and shape the controllers it builds.

Contract:

* An :class:`Extension` has ``install(manager)``; :meth:`pyctrl.Manager.add_extension` calls
  it once, before any controller is built. It may use the Manager's public API: ``add``
  runnables, health checks, ``ensure_leader_election``, ``gate_controllers`` (a Lease of
  this replica's own that gates the controllers instead of leadership),
  ``client_with_budget`` (a client with a rate limit of its own), ``close_on_shutdown``,
  ``add_client_wrapper`` (wraps what ``client_for_leader`` returns) and
  ``add_controller_hook``.
* A :class:`ControllerHook` is asked by every Builder about the controller it builds (a
  :class:`ControllerBuild`: its name, its ``for_`` resource and its readers, which hand
  out objects in the form the controller declared them in, typed objects for a kind class
  and dicts for a Resource, so a hook reads them through :mod:`pyctrl.kube.meta`):
  ``for_selector`` adds a label selector to the ``for_`` resource's informers (None: none);
  ``admit_owner`` filters the owners an ``owns`` watch enqueues (None: all); and
  ``wrap_reconciler`` returns the reconciler to run (the one given, or one wrapping it).
  A hook may also have ``owned_selector(build, resource)``: a label selector added to the
  informers of an ``owns`` watch of ``resource`` (looked up by name, so hooks without it
  keep working). Hooks run in the order added; selectors are ANDed, admits must all pass,
  and each wrap wraps the previous one.

This is how :mod:`pyctrl.sharding` is installed; the Manager and the Builder know nothing of
what an extension does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from pyctrl.cache import MultiNamespaceLister, SharedIndexInformer
from pyctrl.kube.resource import Resource
from pyctrl.reconcile import Reconciler, Request

if TYPE_CHECKING:
    from pyctrl.manager import Manager

__all__ = ["ControllerBuild", "ControllerHook", "Extension"]


class Extension(Protocol):
    """An add-on a Manager installs (see module docstring)."""

    def install(self, manager: Manager) -> None: ...


class ControllerBuild(Protocol):
    """What a hook sees of a controller being built (a :class:`pyctrl.builder.Builder`)."""

    @property
    def name(self) -> str: ...

    @property
    def for_resource(self) -> Resource | None: ...

    def reader_for(self, resource: Resource) -> MultiNamespaceLister[Any]: ...

    def informers_for(self, resource: Resource) -> list[SharedIndexInformer]: ...


class ControllerHook(Protocol):
    """Shapes the controllers a Builder builds (see module docstring)."""

    def for_selector(self, build: ControllerBuild) -> str | None: ...

    def admit_owner(self, build: ControllerBuild) -> Callable[[Request], bool] | None: ...

    def wrap_reconciler(self, build: ControllerBuild, reconciler: Reconciler) -> Reconciler: ...
