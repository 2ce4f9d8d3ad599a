"""Manager: runs informers, controllers, leader election, probes, metrics and signals.

Contract (controller-runtime's manager, in threads):

* ``run(stop)``: starts the /metrics and probe HTTP servers, starts the informers (they warm
  their caches whether or not we lead), then runs the controllers' workers only while this
  replica leads (always, without leader election). Controllers start once the informers have
  synced. ``run`` returns when ``stop`` is set and everything has shut down.
* Shutdown order: controllers stop taking work and in-flight reconciles get up to
  ``graceful_shutdown_timeout`` seconds; then the lease is released (when configured), events
  are flushed, informers stopped, HTTP servers closed. Every thread the manager started is
  joined, except workers still busy after the graceful timeout (logged; they are daemons).
* Losing leadership is fatal: the workers are stopped, everything shuts down as above and
  ``run`` raises :class:`LeaderElectionLost`; the process should exit and restart (cleaner
  than re-acquiring with half-stopped state).
* Probes: ``/healthz`` has ``ping``, ``controller-<name>-workers`` per controller
  (:meth:`Controller.check`) and, with leader election, ``leader-election``
  (:meth:`LeaderElector.check`); ``/readyz`` has ``ping`` and ``informers-synced``; more via
  :meth:`add_healthz_check`/:meth:`add_readyz_check`. ``/metrics`` serves ``registry``.
* Configuration: ``Manager(client, ManagerOptions(...), registry=, clock=)``; the options
  (leader election, metrics, health probes, namespace, timeouts) are grouped, frozen and
  validated in :mod:`pyctrl._manager_options`. The keyword arguments of earlier releases
  (``leader_election_id=``, ``metrics_bind_address=``, ...) still work, mapped onto the
  options with a DeprecationWarning (:mod:`pyctrl._manager_compat`).
* Metrics: ``registry`` also gets the ``process_*``, ``python_gc_*`` and ``python_info``
  collectors and ``python_gc_duration_seconds`` (GC pauses, :mod:`pyctrl.serving.gcmetrics`)
  (``MetricsOptions.runtime_metrics=False`` skips them). With ``MetricsOptions.secure`` the
  metrics server speaks HTTPS and every request passes ``MetricsOptions.auth`` (default: a
  :class:`pyctrl.serving.MetricsAuth` on ``client``: TokenReview, then a SubjectAccessReview
  for ``get`` on the path). Probes stay plain HTTP on their own address. The servers are
  :mod:`pyctrl.serving.servers`.
* Runnables (controller-runtime's ``Runnable``, :mod:`pyctrl._runnables`): :meth:`add` takes
  anything with ``run(stop)``. ``needs_leader=False`` ones start with the probe servers,
  before the informers, and are stopped after the controllers (so an admission webhook
  answers until the workers are done); ``needs_leader=True`` ones run only while leading,
  with the controllers. Each runs in its own named thread and is joined on shutdown (within
  ``graceful_shutdown_timeout``). A runnable that raises or returns before its stop is
  logged and fails the ``runnables`` check of ``/healthz``.
* Leader-scoped writes: :meth:`client_for_leader` (and the event broadcaster) refuse writes
  with :class:`pyctrl.errors.NotLeader` once the lease can not be trusted (fencing at the
  client: a replica frozen past its renew deadline sends nothing on resume).
* Sharding (``sharding=ShardingOptions(...)``, see :mod:`pyctrl.sharding`): every replica's
  controllers work at once, each gated by its own shard Lease (a second
  :class:`LeaderElector` on ``<controller>-shard-<shard id>``; losing it is fatal like losing
  leadership, and ``client_for_leader`` is fenced by it); leader election still runs (created
  on ``<controller>-sharder`` in ``lease_namespace`` when not configured) and only gates the
  ``needs_leader`` runnables, among them the :class:`pyctrl.sharding.Sharder` that labels
  objects. The Builder filters the sharded controller's ``for_`` informer by the shard label
  and wraps its reconciler in a :class:`pyctrl.sharding.ShardReconciler`.
* :func:`install_signal_handlers`: the first SIGTERM/SIGINT sets ``stop`` (graceful); a second
  one exits the process at once with status 1.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, Unpack

import structlog
from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
)

from pyctrl._manager_compat import LegacyManagerKeywords, options_from_keywords
from pyctrl._manager_options import (
    HealthOptions,
    LeaderElectionOptions,
    ManagerOptions,
    MetricsOptions,
    default_identity,
)
from pyctrl._runnables import Runnable, RunnableEntry, RunnableGroup
from pyctrl.builder import Builder
from pyctrl.cache import SharedInformerFactory
from pyctrl.clock import Clock, RealClock
from pyctrl.controller import Controller, RequestT
from pyctrl.kube.client import RESTClient
from pyctrl.kube.fenced import FencedClient
from pyctrl.kube.interface import Client
from pyctrl.leaderelection import LeaderCallbacks, LeaderElectionConfig, LeaderElector
from pyctrl.record import EventBroadcaster, EventRecorder
from pyctrl.serving import (
    Check,
    Checks,
    HTTPServerThread,
    MetricsAuth,
    gc_pause_histogram,
    parse_bind_address,
    serving_context,
)
from pyctrl.serving.servers import ServerSet, metrics_server, probe_server
from pyctrl.sharding import Sharder, ShardingOptions, ShardLeaseLock, ShardWatch

__all__ = ["HealthOptions", "LeaderElectionLost", "LeaderElectionOptions", "Manager",
           "ManagerOptions", "MetricsOptions", "Runnable", "default_identity",
           "install_signal_handlers"]

log = structlog.get_logger(__name__)

_POLL_SECONDS = 0.05  # how often run() looks at its stop event and the leadership flag


class LeaderElectionLost(RuntimeError):
    """Raised by :meth:`Manager.run` after this replica lost its leader lease."""


def _register_runtime_collectors(registry: CollectorRegistry) -> None:
    """process_*, python_gc_* (with pyctrl's python_gc_duration_seconds) and python_info on
    ``registry`` (each once per registry)."""
    from prometheus_client import REGISTRY

    gc_pause_histogram(registry)
    if registry is REGISTRY:  # the default registry has the others already
        return
    for make in (lambda: ProcessCollector(registry=registry),
                 lambda: GCCollector(registry=registry),
                 lambda: PlatformCollector(registry=registry)):
        with contextlib.suppress(ValueError):  # already registered on this registry
            make()


class Manager:
    """Owns and runs everything a controller process needs (see module docstring)."""

    def __init__(
        self,
        client: Client,
        options: ManagerOptions | None = None,
        *,
        registry: CollectorRegistry | None = None,
        clock: Clock | None = None,
        sharding: ShardingOptions | None = None,
        **deprecated: Unpack[LegacyManagerKeywords],
    ) -> None:
        self.options = opts = options_from_keywords(options, deprecated, stacklevel=2)
        self.client = client
        self.registry = registry if registry is not None else CollectorRegistry()
        if opts.metrics.runtime_metrics:
            _register_runtime_collectors(self.registry)
        self.clock: Clock = clock or RealClock()
        self.informers = SharedInformerFactory(
            client, default_resync=opts.default_resync, namespace=opts.namespace,
            clock=self.clock)
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
        self._lost = threading.Event()
        self._stopping = False
        self._ran = False
        self._owned_clients: list[RESTClient] = []
        election = opts.leader_election
        if election is None and sharding is not None:
            # The sharder needs a leader: elect it on <controller>-sharder, shard timing.
            election = LeaderElectionOptions(
                id=sharding.leader_lease_name, namespace=sharding.lease_namespace,
                identity=deprecated.get("leader_election_identity"),
                lease_duration=sharding.lease_duration, renew_deadline=sharding.renew_deadline,
                retry_period=sharding.retry_period)
        self.elector: LeaderElector | None = None
        if election is not None:
            self.elector = LeaderElector(
                election.config(client),
                LeaderCallbacks(self._run_leader_work, self._on_stopped_leading),
                clock=self.clock, registry=self.registry,
            )
            self._healthz.add("leader-election", self.elector.check)
        self.sharding = sharding
        self.shard_elector: LeaderElector | None = None
        if sharding is not None and self.elector is not None:
            self.shard_elector = LeaderElector(
                LeaderElectionConfig(ShardLeaseLock(client, sharding),
                                     lease_duration=sharding.lease_duration,
                                     renew_deadline=sharding.renew_deadline,
                                     retry_period=sharding.retry_period,
                                     name=sharding.lease_name),
                LeaderCallbacks(self._run_controllers, self._on_shard_lost),
                clock=self.clock, registry=self.registry,
            )
            self._healthz.add("shard-lease", self.shard_elector.check)
            watch = ShardWatch(client, sharding, clock=self.clock, elector=self.elector)
            self.add(watch)  # every replica, from the start (see pyctrl.sharding.watch)
            writes = self._sharder_client(client, sharding)
            self.add(Sharder(FencedClient(writes, self.elector, registry=self.registry),
                             sharding, watch=watch, clock=self.clock), needs_leader=True)

    def _sharder_client(self, client: Client, sharding: ShardingOptions) -> Client:
        """The sharder's writes get a rate limit of their own (``write_qps``/``write_burst``)
        when ``client`` is a RESTClient: a failover's relabels must not queue behind the
        controllers' limiter. The manager closes it on shutdown."""
        if not isinstance(client, RESTClient):
            return client
        own = RESTClient(client.config, qps=sharding.write_qps, burst=sharding.write_burst,
                         pool_maxsize=sharding.writers, clock=self.clock,
                         registry=self.registry, user_agent="pyctrl-sharder")
        self._owned_clients.append(own)
        return own

    @property
    def graceful_shutdown_timeout(self) -> float:
        return self.options.graceful_shutdown_timeout

    @property
    def component(self) -> str:
        return self.options.component

    # -- wiring -------------------------------------------------------------------------
    def controller(self, name: str, *, workers: int = 1) -> Builder:
        """A :class:`pyctrl.builder.Builder` for a controller named ``name`` on this manager:
        ``.for_(...).owns(...).complete(reconciler)`` registers it (see pyctrl/builder.py)."""
        return Builder(self, name, workers=workers)

    def add_controller(self, controller: Controller[RequestT]) -> None:
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
        """The runnables added so far (name, needs_leader, last failure), in order added."""
        return [*self._runnables.entries(needs_leader=False),
                *self._runnables.entries(needs_leader=True)]

    def add_healthz_check(self, name: str, fn: Check) -> None:
        self._healthz.add(name, fn)

    def add_readyz_check(self, name: str, fn: Check) -> None:
        self._readyz.add(name, fn)

    def client_for_leader(self) -> Client:
        """``client`` with leader-scoped writes: with leader election, a
        :class:`pyctrl.kube.FencedClient` that refuses every write (NotLeader) once this
        replica's lease can no longer be trusted; without it, ``client`` itself. Controllers
        that need leadership write through it; so does the event broadcaster."""
        holder = self.shard_elector or self.elector  # with sharding: this shard's Lease
        if holder is None:
            return self.client
        return FencedClient(self.client, holder, registry=self.registry)

    def event_broadcaster(self) -> EventBroadcaster:
        """The manager's event broadcaster (created on first use, flushed on stop)."""
        with self._mu:
            if self._broadcaster is None:
                self._broadcaster = EventBroadcaster(
                    self.client_for_leader(), component=self.component, clock=self.clock,
                    registry=self.registry, queue_size=self.options.event_queue_size,
                )
            return self._broadcaster

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
        metrics, health = self.options.metrics, self.options.health
        factories: dict[str, Callable[[], HTTPServerThread]] = {}
        metrics_bind = parse_bind_address(metrics.bind_address)
        if metrics_bind is not None:
            ctx, auth = None, None
            if metrics.secure:
                ctx = serving_context(metrics.cert_dir)
                auth = metrics.auth or MetricsAuth(self.client, clock=self.clock)
            factories["metrics"] = lambda: metrics_server(
                metrics_bind, self.registry, ssl_context=ctx, authorize=auth)
        probe_bind = parse_bind_address(health.bind_address)
        if probe_bind is not None:
            factories["probes"] = lambda: probe_server(probe_bind, self._healthz, self._readyz)
        self._servers.start(factories)

    def _run_leader_work(self, stop: threading.Event) -> None:
        """What runs only while leading: needs_leader runnables and the controllers."""
        started = self._runnables.start(stop, needs_leader=True)
        try:
            if self.shard_elector is None:
                self._run_controllers(stop)
            else:  # sharded: the controllers run under the shard Lease instead
                stop.wait()
        finally:
            stop.set()
            self._runnables.join(started, self.graceful_shutdown_timeout)

    def _run_controllers(self, stop: threading.Event) -> None:
        """Run every controller until ``stop``; then give in-flight work the grace period."""
        # Poll has_synced on stop's real-time wait: the factory's wait_for_cache_sync waits on
        # the Clock and would not notice ``stop`` under a FakeClock nobody steps.
        while self._informers_synced() is not None:
            if stop.wait(_POLL_SECONDS):
                return
        threads = [
            threading.Thread(target=c.run, args=(stop,), name=f"controller-{c.name}",
                             daemon=True)
            for c in self._controllers
        ]
        for t in threads:
            t.start()
        log.info("controllers started", count=len(threads))
        stop.wait()
        deadline = self.clock.monotonic() + self.graceful_shutdown_timeout
        for t in threads:
            t.join(max(0.0, deadline - self.clock.monotonic()))
        stuck = [t.name for t in threads if t.is_alive()]
        if stuck:
            log.error("graceful shutdown timed out; abandoning busy workers", controllers=stuck,
                      timeout=self.graceful_shutdown_timeout)
        if self._broadcaster is not None:  # write their events while the lease is still ours
            self._broadcaster.flush(5.0)

    def _on_stopped_leading(self) -> None:
        if not self._stopping:
            log.error("leader election lost")
            self._lost.set()

    def _on_shard_lost(self) -> None:
        if not self._stopping:
            log.error("shard lease lost")
            self._lost.set()

    def _run_elector(self, elector: LeaderElector, stop: threading.Event) -> None:
        try:
            elector.run(stop)
        finally:
            if not self._stopping:
                self._lost.set()

    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` (see module docstring); raises LeaderElectionLost."""
        with self._mu:
            if self._ran:
                raise RuntimeError("a Manager runs once")
            self._ran = True
        work_stop = threading.Event()  # controllers (no election) or the elector
        informer_stop = threading.Event()
        worker: threading.Thread | None = None
        shard: threading.Thread | None = None
        try:
            self._start_servers()
            self._runnables.seal()
            self._runnables.start(self._runnable_stop, needs_leader=False)
            self.informers.start(informer_stop)
            if self.elector is not None:
                worker = threading.Thread(target=self._run_elector,
                                          args=(self.elector, work_stop),
                                          name="leader-elector", daemon=True)
            else:
                worker = threading.Thread(target=self._run_leader_work, args=(work_stop,),
                                          name="controllers", daemon=True)
            worker.start()
            if self.shard_elector is not None:
                shard = threading.Thread(target=self._run_elector,
                                         args=(self.shard_elector, work_stop),
                                         name="shard-elector", daemon=True)
                shard.start()
            while not stop.wait(_POLL_SECONDS) and not self._lost.is_set():
                pass
        finally:
            self._shutdown(work_stop, informer_stop, worker, shard)
        if self._lost.is_set():
            raise LeaderElectionLost("leader election lost")

    def _shutdown(self, work_stop: threading.Event, informer_stop: threading.Event,
                  worker: threading.Thread | None,
                  shard: threading.Thread | None = None) -> None:
        log.info("shutting down", leader_lost=self._lost.is_set())
        self._stopping = True
        work_stop.set()
        if worker is not None:
            # Controllers get the grace period; the elector then releases (a few API calls).
            worker.join(self.graceful_shutdown_timeout + 30.0)
            if worker.is_alive():
                log.error("shutdown of controllers/elector timed out")
        if shard is not None:
            shard.join(self.graceful_shutdown_timeout + 30.0)
        self._runnable_stop.set()
        self._runnables.join(self._runnables.entries(needs_leader=False),
                             self.graceful_shutdown_timeout)
        if self._broadcaster is not None:
            self._broadcaster.shutdown()
        informer_stop.set()
        self.informers.shutdown()
        for controller in self._controllers:
            controller.queue.shut_down()  # idempotent; covers controllers that never ran
        for owned in self._owned_clients:
            owned.close()
        self._servers.shutdown()
        log.info("shutdown complete")


def install_signal_handlers(stop: threading.Event) -> Callable[[], None]:
    """SIGTERM/SIGINT set ``stop``; a second signal calls ``os._exit(1)``.

    Call from the main thread. Returns a function that restores the previous handlers.
    """
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            os._exit(1)
        log.info("signal received; shutting down gracefully (again to force)", signal=signum)
        stop.set()

    for sig in previous:
        signal.signal(sig, handle)

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore
