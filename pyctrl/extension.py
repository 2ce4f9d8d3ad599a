"""Extensions: add-ons that install themselves on a Manager and shape the controllers it builds.

Contract (the public, typed extension API; nothing here imports the Manager):

* An :class:`Extension` has ``install(host)``; ``Manager.add_extension`` calls it once, before
  any controller is built, with the Manager as an :class:`ExtensionHost`: what an extension
  may use, and all it may use. ``client``, ``clock``, ``registry``; ``add`` a runnable (with
  ``needs_leader``); ``add_healthz_check``; ``ensure_leader_election`` (the configured elector,
  or one made from the options given); ``gate_controllers`` (a Lease of this replica's own
  then gates the controllers instead of leadership); ``client_with_budget`` (a client with a
  rate limit of its own); ``close_on_shutdown``; ``add_client_wrapper`` (wraps what
  ``client_for_leader`` returns); ``client_for_leader``; ``add_controller_hook``.
* A :class:`ControllerHook` is asked by every Builder about the controller it builds (a
  :class:`ControllerBuild`: its name, its ``for_`` and ``owns`` resources and its readers,
  which hand out objects in the form the controller declared them in, typed objects for a
  kind class and dicts for a Resource, so a hook reads them through :mod:`pyctrl.kube.meta`):
  ``for_selector`` adds a label selector to the ``for_`` resource's informers,
  ``owned_selector(build, resource)`` to the informers of an ``owns`` watch of ``resource``
  (None: none); ``admit_owner`` filters the owners an ``owns`` watch enqueues (None: all);
  ``wrap_reconciler`` returns the reconciler to run (the one given, or one wrapping it).
  :class:`NoHook` answers "nothing" to each, to subclass for a hook that shapes one thing.
  Hooks run in the order added; selectors are ANDed, admits must all pass, and each wrap
  wraps the previous one.

This is how :mod:`pyctrl.sharding` is installed; the Manager and the Builder know nothing of
what an extension does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from pyctrl._runnables import Runnable
from pyctrl.cache import MultiNamespaceLister, SharedIndexInformer, SharedInformerFactory
from pyctrl.clock import Clock
from pyctrl.controller import Controller
from pyctrl.kube.interface import Client
from pyctrl.kube.resource import Resource
from pyctrl.leaderelection import LeaderElectionOptions, LeaderElector
from pyctrl.reconcile import Reconciler, Request
from pyctrl.serving import Check

__all__ = ["ControllerBuild", "ControllerHook", "ControllerHost", "Extension", "ExtensionHost",
           "NoHook"]


class ControllerBuild(Protocol):
    """What a hook sees of a controller being built (a :class:`pyctrl.builder.Builder`)."""

    @property
    def name(self) -> str: ...

    @property
    def for_resource(self) -> Resource | None: ...

    @property
    def owned_resources(self) -> tuple[Resource, ...]: ...

    def reader_for(self, resource: Resource) -> MultiNamespaceLister[Any]: ...

    def informers_for(self, resource: Resource) -> list[SharedIndexInformer]: ...


class ControllerHook(Protocol):
    """Shapes the controllers a Builder builds (see module docstring)."""

    def for_selector(self, build: ControllerBuild) -> str | None: ...

    def owned_selector(self, build: ControllerBuild, resource: Resource) -> str | None: ...

    def admit_owner(self, build: ControllerBuild) -> Callable[[Request], bool] | None: ...

    def wrap_reconciler(self, build: ControllerBuild, reconciler: Reconciler) -> Reconciler: ...


class NoHook:
    """A :class:`ControllerHook` that shapes nothing: subclass it and override what you
    shape."""

    def for_selector(self, build: ControllerBuild) -> str | None:
        return None

    def owned_selector(self, build: ControllerBuild, resource: Resource) -> str | None:
        return None

    def admit_owner(self, build: ControllerBuild) -> Callable[[Request], bool] | None:
        return None

    def wrap_reconciler(self, build: ControllerBuild, reconciler: Reconciler) -> Reconciler:
        return reconciler


class ExtensionHost(Protocol):
    """What an extension may use of the Manager it is installed on (module docstring)."""

    @property
    def client(self) -> Client: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def registry(self) -> CollectorRegistry: ...

    def add(self, runnable: Runnable, *, needs_leader: bool = False) -> None: ...

    def add_healthz_check(self, name: str, fn: Check) -> None: ...

    def ensure_leader_election(self, options: LeaderElectionOptions) -> LeaderElector: ...

    def gate_controllers(self, options: LeaderElectionOptions, *,
                         check: str) -> LeaderElector: ...

    def client_with_budget(self, qps: float, burst: int, *, user_agent: str,
                           pool_maxsize: int = 8) -> Client: ...

    def close_on_shutdown(self, close: Callable[[], None]) -> None: ...

    def add_client_wrapper(self, wrap: Callable[[Client], Client]) -> None: ...

    def client_for_leader(self) -> Client: ...

    def add_controller_hook(self, hook: ControllerHook) -> None: ...


class ControllerHost(Protocol):
    """What a :class:`pyctrl.builder.Builder` uses of its Manager: time, metrics, the shared
    informers, the hooks of the extensions installed, and where the built controller goes.
    The Builder sees the Manager through it, so the Manager may build controllers itself."""

    @property
    def clock(self) -> Clock: ...

    @property
    def registry(self) -> CollectorRegistry: ...

    @property
    def informers(self) -> SharedInformerFactory: ...

    @property
    def controller_hooks(self) -> tuple[ControllerHook, ...]: ...

    def add_controller(self, controller: Controller[Any]) -> None: ...


class Extension(Protocol):
    """An add-on a Manager installs (see module docstring)."""

    def install(self, host: ExtensionHost) -> None: ...
