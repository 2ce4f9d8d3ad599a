"""The Manager users build controllers on: :class:`pyctrl.manager.Manager` plus the Builder.

Contract: ``pyctrl.Manager`` is this class. Everything of :class:`pyctrl.manager.Manager`
(which knows nothing of builders), and:

* ``controller(name, workers=1)``: a :class:`pyctrl.builder.Builder` for a controller on this
  manager (``.for_(...).owns(...).complete(reconciler)`` registers it);
* ``rbac_rule(*rules)``: permissions the code needs that no declaration shows, for
  ``python -m pyctrl gen rbac`` (:mod:`pyctrl.rbac`); nothing at run time;
* ``declarations=``: the :class:`pyctrl.rbac.Declarations` each Builder and rule is recorded
  in (a generator passes its own and reads it; default: one of the manager's own);
* ``run(stop)`` first logs a warning naming each Builder that never completed (it built no
  controller: most likely a forgotten ``.complete(...)``), then runs as the base class does.

It is the top layer: it imports the builder, which imports the manager, never the reverse.
"""

from __future__ import annotations

import threading

import structlog
from prometheus_client import CollectorRegistry

from pyctrl import manager
from pyctrl._manager_options import ManagerOptions
from pyctrl.builder import Builder
from pyctrl.clock import Clock
from pyctrl.kube.interface import Client
from pyctrl.rbac import Declarations, PolicyRule

__all__ = ["Manager"]

log = structlog.get_logger("pyctrl.manager")


class Manager(manager.Manager):
    """:class:`pyctrl.manager.Manager` with the Builder (see module docstring)."""

    def __init__(self, client: Client, options: ManagerOptions | None = None, *,
                 registry: CollectorRegistry | None = None, clock: Clock | None = None,
                 declarations: Declarations | None = None) -> None:
        super().__init__(client, options, registry=registry, clock=clock)
        self._declarations = declarations if declarations is not None else Declarations()

    def controller(self, name: str, *, workers: int = 1) -> Builder:
        """A :class:`pyctrl.builder.Builder` for a controller named ``name`` on this manager:
        ``.for_(...).owns(...).complete(reconciler)`` registers it (see pyctrl/builder.py)."""
        builder = Builder(self, name, workers=workers)
        self._declarations.add_controller(builder)
        return builder

    def rbac_rule(self, *rules: PolicyRule) -> None:
        """Permissions the code needs that no declaration shows, for
        ``python -m pyctrl gen rbac`` (:mod:`pyctrl.rbac`); nothing at run time."""
        self._declarations.add_rules(*rules)

    def run(self, stop: threading.Event) -> None:
        for builder in self._declarations.controllers:
            if not builder.completed:
                log.warning("controller builder never completed: no controller was built "
                            "(call .complete(reconciler) at the end of the chain)",
                            controller=builder.name)
        super().run(stop)
