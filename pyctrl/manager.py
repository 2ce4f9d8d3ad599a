"""Manager: runs informers, controllers, leader election, probes, metrics and runnables.

Contract (controller-runtime's manager, in threads):

* ``Manager(client, ManagerOptions(...), registry=, clock=)``: options grouped, frozen and
  validated (:mod:`pyctrl._manager_options`); they are the only way to configure it.
* This class is ``pyctrl.Manager``. ``controller(name, workers=1)`` is a
  :class:`pyctrl.builder.Builder` for a controller on this manager
  (``.for_(...).owns(...).complete(reconciler)`` registers it through
  :meth:`add_controller`, which also takes controllers built by hand). The Builder sees the
  manager only as a :class:`pyctrl.extension.ControllerHost` and never imports this module.
* ``rbac_rule(*rules)``: permissions the code needs that no declaration shows, for
  ``python -m pyctrl gen rbac`` (:mod:`pyctrl.rbac`); nothing at run time. ``declarations=``
  is the :class:`pyctrl.rbac.Declarations` each Builder and rule is recorded in (a generator
  passes its own and reads it; default: one of the manager's own). ``run`` first logs a
  warning naming each Builder that never completed (most likely a forgotten
  ``.complete(...)``).
* ``run(stop)``: starts the /metrics and probe servers (:mod:`pyctrl.serving.servers`), the
  ``needs_leader=False`` runnables (:mod:`pyctrl._runnables`) and the informers (they warm
  their caches whether or not we lead); once the informers synced, the controllers' workers
  run only while this replica leads (always, without leader election), with the
  ``needs_leader`` runnables. It returns when ``stop`` is set and everything has shut down.
* Shutdown order: controllers stop taking work and in-flight reconciles get up to
  ``graceful_shutdown_timeout``; the lease is released; the other runnables stop (a webhook
  answers until the workers are done); events are flushed, informers stopped, servers
  closed. Every thread is joined, except workers still busy after the timeout (logged).
* Garbage collector: once every informer synced, a ``gc-tuner`` thread applies
  ``ManagerOptions.gc`` (e.g. a full collection then ``gc.freeze()``, so later full
  collections skip the caches' first fill; see :mod:`pyctrl._gctune`), on every replica,
  leader or not.
* Losing leadership (or the controller gate) is fatal: everything shuts down as above and
  ``run`` raises :class:`LeaderElectionLost`; the process should exit and restart. A lease
  that could not be renewed in time (an API server outage) is not lost by itself: with
  ``LeaderElectionOptions.regain_after_fence`` (the default) writes are fenced, the workers
  wait (:mod:`pyctrl.availability`), and leadership goes on once the lease is renewed; it is
  lost when another replica is seen holding it.
* Probes: ``/healthz`` has ``ping``, ``runnables``, ``controller-<name>-workers`` and, with
  leader election, ``leader-election``; ``/readyz`` has ``ping`` and ``informers-synced``.
  ``/metrics`` serves ``registry`` (HTTPS behind ``MetricsOptions.auth``, default a
  :class:`pyctrl.serving.MetricsAuth`, when ``MetricsOptions.secure``), the informers'
  ``pyctrl_informer_undecodable_objects`` gauge among its series.
* Leader-scoped writes: :meth:`client_for_leader` (and the event broadcaster) refuse writes
  with :class:`pyctrl.errors.NotLeader` once the lease (or the gate) can not be trusted. Its
  writes are read back by the Manager's listers (:attr:`own_writes`, read-your-own-writes).
* Extensions (:mod:`pyctrl.extension`): :meth:`add_extension` installs an add-on before the
  controllers are built (before the first reader of :attr:`controller_hooks`, which every
  Builder is); the Manager is its :class:`pyctrl.extension.ExtensionHost`:
  :meth:`ensure_leader_election`, :meth:`gate_controllers` (a Lease of this replica's own then
  gates the controllers and fences ``client_for_leader``; leadership gates only the
  ``needs_leader`` runnables), :meth:`close_on_shutdown`, :meth:`add_controller_hook` (asked
  by every Builder) and :meth:`add_client_wrapper`, among others.
* :func:`install_signal_handlers` (:mod:`pyctrl._signals`): the first SIGTERM/SIGINT sets
  ``stop``; a second one exits the process at once with status 1.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from pyctrl._gctune import tune_after_sync
from pyctrl._leadership import Leadership
from pyctrl._manager_options import GCOptions, HealthOptions, ManagerOptions, MetricsOptions
from pyctrl._runnables import Runnable, RunnableEntry, RunnableGroup, run_controllers
from pyctrl._signals import install_signal_handlers
from pyctrl.builder import Builder
from pyctrl.cache import SharedInformerFactory
from pyctrl.cache.ownwrites import OwnWrites, RecordingClient
from pyctrl.cache.quarantine import undecodable_collector
from pyctrl.clock import Clock, RealClock
from pyctrl.controller import Controller, RequestT
from pyctrl.extension import ControllerHook, Extension
from pyctrl.kube.client import RESTClient
from pyctrl.kube.fenced import FencedClient
from pyctrl.kube.interface import Client
from pyctrl.leaderelection import LeaderElectionOptions, LeaderElector
from pyctrl.rbac import Declarations, PolicyRule
from pyctrl.record import EventBroadcaster, EventRecorder
from pyctrl.serving import Check, Checks, MetricsAuth
from pyctrl.serving.auth import KNOWN_BURST, KNOWN_QPS
from pyctrl.serving.gcmetrics import register_runtime_collectors
from pyctrl.serving.servers import ServerSet, server_factories

__all__ = ["GCOptions", "HealthOptions", "LeaderElectionLost",
           "LeaderElectionOptions", "Manager", "ManagerOptions", "MetricsOptions", "Runnable",
           "install_signal_handlers"]

log = structlog.get_logger(__name__)

_POLL_SECONDS = 0.05  # how often run() looks at its stop event and the leadership flag


class LeaderElectionLost(RuntimeError):
    """Raised by :meth:`Manager.run` after this replica lost its leader lease (or gate)."""


class Manager:
    """Owns and runs everything a controller process needs (see module docstring)."""

    def __init__(self, client: Client, options: ManagerOptions | None = None, *,
                 registry: CollectorRegistry | None = None, clock: Clock | None = None,
                 declarations: Declarations | None = None) -> None:
        self.options = opts = options if options is not None else ManagerOptions()
        self._declarations = declarations if declarations is not None else Declarations()
        self.client = client
        self.registry = registry if registry is not None else CollectorRegistry()
        if opts.metrics.runtime_metrics:
            register_runtime_collectors(self.registry)
        self.clock: Clock = clock or RealClock()
        self.own_writes = OwnWrites(clock=self.clock, registry=self.registry,
                                    timeout=opts.read_own_writes_timeout)
        self.informers = SharedInformerFactory(
            client, default_resync=opts.default_resync, namespace=opts.namespace,
            clock=self.clock, watch_list=opts.watch_list, own_writes=self.own_writes)
        self.registry.register(undecodable_collector(self.informers.undecodable))
        self._controllers: list[Controller[Any]] = []  # any request type
        self._runnables = RunnableGroup(self.clock)
        self._runnable_stop = threading.Event()  # the needs_leader=False runnables' stop
        self._healthz, self._readyz = Checks("healthz"), Checks("readyz")
        self._healthz.add("ping", lambda: None)
        self._readyz.add("ping", lambda: None)
        self._readyz.add("informers-synced", self._informers_synced)
        self._healthz.add("runnables", self._runnables.check)
        self._servers = ServerSet()
        self._broadcaster: EventBroadcaster | None = None
        self._mu = threading.Lock()
        self._ran = self._hooks_read = False
        self._closers: list[Callable[[], None]] = []
        self._hooks: list[ControllerHook] = []
        self._client_wrappers: list[Callable[[Client], Client]] = []
        self._leadership = Leadership(client, clock=self.clock, registry=self.registry,
                                      healthz=self._healthz, on_lead=self._run_leader_work,
                                      on_gate=self._run_controllers)
        if opts.leader_election is not None:
            self.ensure_leader_election(opts.leader_election)

    # -- wiring -------------------------------------------------------------------------
    def controller(self, name: str, *, workers: int = 1) -> Builder:
        """A Builder for a controller named ``name`` on this manager (module docstring)."""
        builder = Builder(self, name, workers=workers)
        self._declarations.add_controller(builder)
        return builder

    def rbac_rule(self, *rules: PolicyRule) -> None:
        """Record permissions no declaration shows, for ``gen rbac`` (module docstring)."""
        self._declarations.add_rules(*rules)

    def add_controller(self, controller: Controller[RequestT]) -> None:
        """Run ``controller`` with the manager (its workers while leading, or gated)."""
        with self._mu:
            if self._ran:
                raise RuntimeError("add controllers before Manager.run")
            self._controllers.append(controller)
        # A worker thread that ended while it should run fails /healthz (restart the pod).
        self._healthz.add(f"controller-{controller.name}-workers", controller.check)

    def add(self, runnable: Runnable, *, needs_leader: bool = False) -> None:
        """Run ``runnable.run(stop)`` with the manager (see module docstring)."""
        self._runnables.add(runnable, needs_leader=needs_leader)

    def runnables(self) -> list[RunnableEntry]:
        """The runnables added so far (name, needs_leader, last failure)."""
        return [*self._runnables.entries(needs_leader=False),
                *self._runnables.entries(needs_leader=True)]

    def add_healthz_check(self, name: str, fn: Check) -> None:
        self._healthz.add(name, fn)

    def add_readyz_check(self, name: str, fn: Check) -> None:
        self._readyz.add(name, fn)

    # -- extensions -----------------------------------------------------------------------
    def add_extension(self, extension: Extension) -> None:
        """Install ``extension`` (before any controller is built; see module docstring)."""
        if self._hooks_read or self._controllers or self._ran:
            raise RuntimeError("add extensions before building controllers")
        extension.install(self)

    def add_controller_hook(self, hook: ControllerHook) -> None:
        """Ask ``hook`` about every controller built from now on (see pyctrl.extension)."""
        self._hooks.append(hook)

    def add_client_wrapper(self, wrap: Callable[[Client], Client]) -> None:
        """Wrap every client :meth:`client_for_leader` returns from now on (in the order
        added; an extension's stamp on the objects its controllers create)."""
        self._client_wrappers.append(wrap)

    @property
    def controller_hooks(self) -> tuple[ControllerHook, ...]:
        """The hooks every Builder asks (reading them closes :meth:`add_extension`)."""
        self._hooks_read = True
        return tuple(self._hooks)

    @property
    def elector(self) -> LeaderElector | None:
        """The leader elector (None without leader election)."""
        return self._leadership.elector

    @property
    def controller_gate(self) -> LeaderElector | None:
        """The elector gating the controllers instead of leadership (see gate_controllers)."""
        return self._leadership.gate

    def ensure_leader_election(self, options: LeaderElectionOptions) -> LeaderElector:
        """The leader elector: the configured one, else one made from ``options``."""
        if self._ran:
            raise RuntimeError("configure leader election before Manager.run")
        return self._leadership.ensure(options)

    def gate_controllers(self, options: LeaderElectionOptions, *, check: str) -> LeaderElector:
        """Run the controllers only while this replica holds ``options``' lock (a Lease of
        its own), instead of while leading; ``client_for_leader`` is fenced by it, losing it
        is fatal and ``/healthz`` reports it as ``check``. Needs leader election (for the
        ``needs_leader`` runnables); one gate per Manager (:mod:`pyctrl._leadership`)."""
        if self._ran:
            raise RuntimeError("gate the controllers before Manager.run")
        return self._leadership.add_gate(options, check)

    def client_with_budget(self, qps: float, burst: int, *, user_agent: str,
                           pool_maxsize: int = 8) -> Client:
        """A client with a rate limit of its own (``qps <= 0``: none) when ``client`` is a
        RESTClient: a new one on the same config, closed with the Manager; any other client
        (a fake) is shared as it is."""
        if not isinstance(self.client, RESTClient):
            return self.client
        own = RESTClient(self.client.config, qps=qps, burst=burst, pool_maxsize=pool_maxsize,
                         clock=self.clock, registry=self.registry, user_agent=user_agent)
        self.close_on_shutdown(own.close)
        return own

    def close_on_shutdown(self, close: Callable[[], None]) -> None:
        """Call ``close`` at the end of shutdown (clients an extension made, ...)."""
        self._closers.append(close)

    # -- what controllers use -------------------------------------------------------------
    def client_for_leader(self) -> Client:
        """``client`` with leader-scoped writes: with leader election (or a controller gate),
        a :class:`pyctrl.kube.FencedClient` that refuses every write (NotLeader) once this
        replica's lease can no longer be trusted; without it, ``client``. Its writes
        are recorded for read-your-own-writes (:mod:`pyctrl.cache.ownwrites`): the
        Manager's listers wait for them. Controllers write through it; so does the event
        broadcaster."""
        holder = self._leadership.holder()
        recorded = RecordingClient(self.client, self.own_writes)
        client: Client = recorded if holder is None else FencedClient(
            recorded, holder, registry=self.registry)
        for wrap in self._client_wrappers:
            client = wrap(client)
        return client

    def event_broadcaster(self) -> EventBroadcaster:
        """The manager's event broadcaster (created on first use, flushed on stop)."""
        with self._mu:
            if self._broadcaster is None:
                self._broadcaster = EventBroadcaster(
                    self.client_for_leader(), component=self.options.component, clock=self.clock,
                    registry=self.registry, queue_size=self.options.event_queue_size)
            return self._broadcaster

    @property
    def has_event_broadcaster(self) -> bool:
        """Whether :meth:`event_broadcaster` (or :meth:`event_recorder`) was used."""
        return self._broadcaster is not None

    def event_recorder(self, component: str | None = None) -> EventRecorder:
        """A recorder on the manager's broadcaster (flushed when the manager stops)."""
        return self.event_broadcaster().new_recorder(component)

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """Where /metrics is served (after ``run`` started), None when disabled."""
        return self._servers.address("metrics")

    @property
    def health_probe_address(self) -> tuple[str, int] | None:
        """Where /healthz and /readyz are served (after ``run`` started)."""
        return self._servers.address("probes")

    def _informers_synced(self) -> str | None:
        pending = [i.name for i in self.informers.informers() if not i.has_synced()]
        return f"not synced: {', '.join(pending)}" if pending else None

    # -- running ------------------------------------------------------------------------
    def _start_servers(self) -> None:
        metrics = self.options.metrics
        self._servers.start(server_factories(
            metrics_address=metrics.bind_address, probe_address=self.options.health.bind_address,
            registry=self.registry, checks=(self._healthz, self._readyz), secure=metrics.secure,
            cert_dir=metrics.cert_dir,
            authorize=lambda: metrics.auth or self._metrics_auth()))

    def _metrics_auth(self) -> MetricsAuth:
        """The default /metrics filter, on a client and review budget of its own: a flood of
        bearer tokens must not spend the controllers' API budget (pyctrl.serving.auth)."""
        m = self.options.metrics
        # The client's own limit covers both review buckets (the shared one and the known
        # tokens'), so a known scraper's review never waits behind the flood's.
        qps = m.auth_qps + KNOWN_QPS if m.auth_qps > 0 else m.auth_qps
        client = self.client_with_budget(qps, m.auth_burst + KNOWN_BURST,
                                         user_agent="pyctrl-metrics-auth", pool_maxsize=4)
        return MetricsAuth(client, clock=self.clock, review_qps=m.auth_qps,
                           review_burst=m.auth_burst)

    def _run_leader_work(self, stop: threading.Event) -> None:
        """What runs only while leading: needs_leader runnables and the controllers."""
        started = self._runnables.start(stop, needs_leader=True)
        try:
            if self.controller_gate is None:
                self._run_controllers(stop)
            else:  # the controllers run under the gate instead
                stop.wait()
        finally:
            stop.set()
            self._runnables.join(started, self.options.graceful_shutdown_timeout)

    def _run_controllers(self, stop: threading.Event) -> None:
        """Run every controller until ``stop``; then give in-flight work the grace period."""
        run_controllers(self._controllers, stop, synced=self._informers_synced,
                        clock=self.clock, timeout=self.options.graceful_shutdown_timeout,
                        poll=_POLL_SECONDS)
        if self._broadcaster is not None:  # write their events while the lease is still ours
            self._broadcaster.flush(5.0)

    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` (see module docstring); raises LeaderElectionLost."""
        with self._mu:
            if self._ran:
                raise RuntimeError("a Manager runs once")
            self._ran = True
        for builder in self._declarations.controllers:
            if not builder.completed:
                log.warning("controller builder never completed: no controller was built "
                            "(call .complete(reconciler) at the end of the chain)",
                            controller=builder.name)
        work_stop = threading.Event()  # controllers (no election) or the electors
        informer_stop = threading.Event()
        threads: list[threading.Thread] = []
        lost = self._leadership.lost
        gc_tuner = threading.Thread(
            target=tune_after_sync, name="gc-tuner", daemon=True,
            args=(self.options.gc, lambda: self._informers_synced() is None, informer_stop))
        try:
            self._start_servers()
            self._runnables.seal()
            self._runnables.start(self._runnable_stop, needs_leader=False)
            self.informers.start(informer_stop)
            gc_tuner.start()
            threads = self._leadership.start(work_stop)
            while not stop.wait(_POLL_SECONDS) and not lost.is_set():
                pass
        finally:
            self._shutdown(work_stop, informer_stop, threads)
            if gc_tuner.ident is not None:  # started
                gc_tuner.join()
        if lost.is_set():
            raise LeaderElectionLost("leader election lost")

    def _shutdown(self, work_stop: threading.Event, informer_stop: threading.Event,
                  threads: list[threading.Thread]) -> None:
        log.info("shutting down", leader_lost=self._leadership.lost.is_set())
        self._leadership.stopping = True
        work_stop.set()
        for thread in threads:
            # Controllers get the grace period; the elector then releases (a few API calls).
            thread.join(self.options.graceful_shutdown_timeout + 30.0)
            if thread.is_alive():
                log.error("shutdown of controllers/elector timed out", thread=thread.name)
        self._runnable_stop.set()
        self._runnables.join(self._runnables.entries(needs_leader=False),
                             self.options.graceful_shutdown_timeout)
        if self._broadcaster is not None:
            self._broadcaster.shutdown()
        informer_stop.set()
        self.informers.shutdown()
        for controller in self._controllers:
            controller.queue.shut_down()  # idempotent; covers controllers that never ran
        for close in self._closers:
            close()
        self._servers.shutdown()
        log.info("shutdown complete")
