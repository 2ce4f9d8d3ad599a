"""ManagerOptions: everything a Manager is configured with, grouped, frozen and validated.

Contract: each options object is immutable and valid once built (``__post_init__`` raises
ValueError naming the field otherwise). There is one way to configure each thing:

* :class:`pyctrl.leaderelection.LeaderElectionOptions` (``ManagerOptions.leader_election``;
  None: no election, the controllers run at once): a ``coordination.k8s.io/v1`` Lease named
  ``id`` in ``namespace`` held as ``identity`` (default
  :func:`pyctrl.leaderelection.default_identity`), with client-go's timing (15 / 10 / 2 s,
  jitter 1.2; ``lease_duration > renew_deadline > jitter_factor * retry_period``) and
  ``release_on_cancel`` (True: a clean stop hands the Lease over at once) and
  ``regain_after_fence`` (True: a lease not renewed in time because of an outage is taken
  back when the server answers, instead of ending leadership). ``lock`` replaces
  the Lease with a lock of your own (tests use :class:`pyctrl.testing.FakeLock`); ``id`` then
  only names the ``leader_election_master_status`` metric and may be empty.
* :class:`MetricsOptions` (``ManagerOptions.metrics``): ``bind_address`` of /metrics (``"0"``:
  off, the default; ``":8080"``: every interface; port 0: any free port); ``secure`` serves
  HTTPS with ``cert_dir``'s tls.crt/tls.key (a self-signed certificate made in memory without
  one; ``cert_dir`` is ignored unless ``secure``) and checks every request with ``auth``
  (default: a :class:`pyctrl.serving.MetricsAuth`, TokenReview + SubjectAccessReview, on a
  budget of its own: reviews of unknown tokens limited to ``auth_qps`` (5) per second,
  burst ``auth_burst`` (10), beyond that answered 429 at once, tokens allowed before on a
  small budget of their own; a client of its own limited to the sum; ``auth_qps <= 0``:
  no limit); ``runtime_metrics`` (True) adds the process, GC and platform collectors.
* :class:`HealthOptions` (``ManagerOptions.health``): ``bind_address`` of /healthz and
  /readyz (``"0"``: off, the default).
* ``ManagerOptions`` itself: ``namespace`` (None: every namespace) the informers watch by
  default, ``default_resync`` (0: never) seconds, ``graceful_shutdown_timeout`` (30 s) for
  in-flight reconciles and runnables, ``component`` ("pyctrl", the events' source) and
  ``event_queue_size`` (10000 events buffered before the sink writes them).
* ``ManagerOptions.watch_list`` (False): the informers sync by a streaming list instead of
  paged LISTs (see :class:`pyctrl.cache.SharedInformerFactory`).
* ``ManagerOptions.read_own_writes_timeout`` (3 s): how long a lister read waits for the
  controller's own write through ``client_for_leader()`` (:mod:`pyctrl.cache.ownwrites`;
  0: it never waits, the writes are still recorded and the stale reads counted).
* ``ManagerOptions.gc``: a :class:`pyctrl._gctune.GCOptions`, how the garbage collector is
  tuned once every informer synced (default: not at all; ``GCOptions(freeze_after_sync=True)``
  runs one full collection then ``gc.freeze()``).

The Manager's dependencies (client, registry, clock) are arguments of the Manager, not options.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyctrl._gctune import GCOptions
from pyctrl.leaderelection import LeaderElectionOptions, default_identity
from pyctrl.serving import Authorizer, parse_bind_address

__all__ = ["GCOptions", "HealthOptions", "LeaderElectionOptions", "ManagerOptions",
           "MetricsOptions", "default_identity"]


def _check_bind(what: str, address: str) -> None:
    try:
        parse_bind_address(address)
    except ValueError as err:
        raise ValueError(f"{what}: {err}") from None


@dataclass(frozen=True)
class MetricsOptions:
    """The /metrics server (see module docstring)."""

    bind_address: str = "0"
    secure: bool = False
    cert_dir: str | None = None
    auth: Authorizer | None = None
    runtime_metrics: bool = True
    auth_qps: float = 5.0
    auth_burst: int = 10

    def __post_init__(self) -> None:
        _check_bind("metrics bind_address", self.bind_address)
        if self.auth_qps > 0 and self.auth_burst < 1:
            raise ValueError("metrics auth_burst must be at least 1 when auth_qps > 0")


@dataclass(frozen=True)
class HealthOptions:
    """The /healthz and /readyz server (see module docstring)."""

    bind_address: str = "0"

    def __post_init__(self) -> None:
        _check_bind("health bind_address", self.bind_address)


@dataclass(frozen=True)
class ManagerOptions:
    """Everything a Manager is configured with (see module docstring)."""

    leader_election: LeaderElectionOptions | None = None
    metrics: MetricsOptions = field(default_factory=MetricsOptions)
    health: HealthOptions = field(default_factory=HealthOptions)
    namespace: str | None = None
    default_resync: float = 0.0
    graceful_shutdown_timeout: float = 30.0
    component: str = "pyctrl"
    event_queue_size: int = 10_000
    gc: GCOptions = field(default_factory=GCOptions)
    watch_list: bool = False
    read_own_writes_timeout: float = 3.0

    def __post_init__(self) -> None:
        if self.read_own_writes_timeout < 0:
            raise ValueError("read_own_writes_timeout must be >= 0 (0: never wait)")
        if self.default_resync < 0:
            raise ValueError("default_resync must be >= 0 (0: never)")
        if self.graceful_shutdown_timeout < 0:
            raise ValueError("graceful_shutdown_timeout must be >= 0")
        if not self.component:
            raise ValueError("component must not be empty")
        if self.event_queue_size < 1:
            raise ValueError("event_queue_size must be at least 1")
