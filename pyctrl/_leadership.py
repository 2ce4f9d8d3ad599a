"""Leadership: which leases gate a Manager's work, and the threads that hold them.

Contract: a Manager has at most one leader elector and at most one controller gate.

* :meth:`Leadership.ensure` makes the leader elector from :class:`LeaderElectionOptions`
  unless one exists (the first configuration wins) and adds the ``leader-election`` /healthz
  check. While this replica leads, ``on_lead(stop)`` runs (the needs_leader runnables and,
  without a gate, the controllers).
* :meth:`Leadership.add_gate` (needs the leader elector; once) adds a second elector on a
  lock of this replica's own: while it is held, ``on_gate(stop)`` runs (the controllers);
  /healthz reports it as ``check``.
* :meth:`holder` is the elector writes are fenced by: the gate, else the leader elector.
* :meth:`start` runs each elector in a daemon thread (``leader-elector``,
  ``controller-gate``), or, without leader election, ``on_lead`` directly (``controllers``).
  Losing a lease, or an elector returning, sets :attr:`lost` unless :attr:`stopping` was set
  first (a planned shutdown).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog
from prometheus_client import CollectorRegistry

from pyctrl.clock import Clock
from pyctrl.kube.interface import Client
from pyctrl.leaderelection import LeaderCallbacks, LeaderElectionOptions, LeaderElector
from pyctrl.serving import Checks

__all__ = ["Leadership"]

log = structlog.get_logger("pyctrl.manager")

Work = Callable[[threading.Event], None]


class Leadership:
    """The leader elector and the controller gate of one Manager (see module docstring)."""

    def __init__(self, client: Client, *, clock: Clock, registry: CollectorRegistry,
                 healthz: Checks, on_lead: Work, on_gate: Work) -> None:
        self._client = client
        self._clock = clock
        self._registry = registry
        self._healthz = healthz
        self._on_lead = on_lead
        self._on_gate = on_gate
        self.elector: LeaderElector | None = None
        self.gate: LeaderElector | None = None
        self.lost = threading.Event()
        self.stopping = False

    def ensure(self, options: LeaderElectionOptions) -> LeaderElector:
        if self.elector is None:
            self.elector = self._elector(options.with_lock(self._client), self._on_lead,
                                         "leader-election", "leader election lost")
        return self.elector

    def add_gate(self, options: LeaderElectionOptions, check: str) -> LeaderElector:
        if self.elector is None or self.gate is not None:
            raise RuntimeError("a controller gate needs leader election, and there is one")
        self.gate = self._elector(options.with_lock(self._client), self._on_gate, check,
                                   "controller gate lost")
        return self.gate

    def holder(self) -> LeaderElector | None:
        return self.gate or self.elector

    def start(self, stop: threading.Event) -> list[threading.Thread]:
        if self.elector is None:
            runs: list[tuple[str, Work]] = [("controllers", self._on_lead)]
        else:
            runs = [("leader-elector", self._runner(self.elector))]
            if self.gate is not None:
                runs.append(("controller-gate", self._runner(self.gate)))
        threads = [threading.Thread(target=run, args=(stop,), name=name, daemon=True)
                   for name, run in runs]
        for thread in threads:
            thread.start()
        return threads

    def _elector(self, options: LeaderElectionOptions, work: Work, check: str,
                 message: str) -> LeaderElector:
        def lost() -> None:
            if not self.stopping:
                log.error(message, check=check)
                self.lost.set()

        elector = LeaderElector(options, LeaderCallbacks(work, lost), clock=self._clock,
                                registry=self._registry)
        self._healthz.add(check, elector.check)
        return elector

    def _runner(self, elector: LeaderElector) -> Work:
        def run(stop: threading.Event) -> None:
            try:
                elector.run(stop)
            finally:
                if not self.stopping:
                    self.lost.set()
        return run
