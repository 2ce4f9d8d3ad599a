"""LeaderElectionOptions and LeaderCallbacks: the settings of one elector.

Contract: the options are immutable and valid once built. ``__post_init__`` enforces, as
client-go does, ``lease_duration > renew_deadline > jitter_factor * retry_period`` with every
duration > 0 and ``jitter_factor >= 1``, so the holder always gives up (at ``renew_deadline``
after its last successful renew) before anyone else may take over (``lease_duration`` after
they saw that renew), and an acquire attempt happens at least once per
``jitter_factor * retry_period``. The Manager and a :class:`LeaderElector` read the same class.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from pyctrl.kube.interface import Client
from pyctrl.leaderelection.identity import default_identity
from pyctrl.leaderelection.lease_lock import LeaseLock
from pyctrl.leaderelection.lock import ResourceLock

__all__ = ["LeaderCallbacks", "LeaderElectionOptions", "check_timing"]


def check_timing(lease_duration: float, renew_deadline: float, retry_period: float,
                 jitter_factor: float = 1.2) -> None:
    """ValueError unless ``lease_duration > renew_deadline > jitter_factor * retry_period``,
    every duration > 0 and ``jitter_factor >= 1`` (see the module docstring)."""
    for name, value in (("lease_duration", lease_duration), ("renew_deadline", renew_deadline),
                        ("retry_period", retry_period)):
        if value <= 0:
            raise ValueError(f"{name} must be greater than zero")
    if jitter_factor < 1.0:
        raise ValueError("jitter_factor must be at least 1.0")
    if lease_duration <= renew_deadline:
        raise ValueError("lease_duration must be greater than renew_deadline")
    if renew_deadline <= jitter_factor * retry_period:
        raise ValueError("renew_deadline must be greater than jitter_factor * retry_period")


@dataclass(frozen=True)
class LeaderElectionOptions:
    """Leader election on a lock, normally a Lease (seconds; see the module docstring).

    * ``id``: the name of the Lease (in ``namespace``, held as ``identity``, default
      :func:`pyctrl.leaderelection.default_identity`) and the label value of the
      ``leader_election_master_status`` metric. ``lock`` replaces the Lease with a lock of
      your own (tests use :class:`pyctrl.testing.FakeLock`); ``id`` then only names the metric
      and may be empty. A :class:`pyctrl.leaderelection.LeaderElector` needs the lock itself:
      :meth:`with_lock` makes the Lease lock (the Manager does).
    * ``lease_duration`` (15): how long non-leaders wait after last seeing the record change
      before they may take the lock.
    * ``renew_deadline`` (10): how long the leader keeps trying to renew before it steps down.
    * ``retry_period`` (2): the pause between attempts (acquire and renew).
    * ``jitter_factor`` (1.2): acquire attempts wait a random time in
      ``[retry_period, jitter_factor * retry_period]`` so candidates do not fire in lockstep.
    * ``release_on_cancel`` (True): on a clean stop, write an empty holder so a standby takes
      over within one retry period instead of waiting for the lease to expire.
    * ``regain_after_fence`` (True): a leader fenced because it could not renew in time (the
      API server unreachable, or this process frozen) keeps leading with its writes fenced
      and takes the lease back as soon as it reads it still naming itself; it steps down only
      when it sees another holder (see :class:`pyctrl.leaderelection.LeaderElector`). False:
      leadership ends at the fence, as client-go's.
    """

    id: str = ""
    namespace: str = "default"
    identity: str | None = None
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    jitter_factor: float = 1.2
    release_on_cancel: bool = True
    regain_after_fence: bool = True
    lock: ResourceLock | None = None

    def __post_init__(self) -> None:
        if not self.id and self.lock is None:
            raise ValueError("leader election needs an id (the Lease name) or a lock")
        if not self.namespace:
            raise ValueError("leader election needs a namespace for its Lease")
        if self.identity is not None and not self.identity:
            raise ValueError("leader election identity must not be empty (None: generated)")
        check_timing(self.lease_duration, self.renew_deadline, self.retry_period,
                     self.jitter_factor)
        if self.lock is not None and not self.lock.identity():
            raise ValueError("the lock's identity must not be empty")

    def with_lock(self, client: Client) -> LeaderElectionOptions:
        """These options with ``lock`` set: the given one, else the Lease ``id`` in
        ``namespace`` through ``client``, held as ``identity`` (or a generated one)."""
        if self.lock is not None:
            return self
        return replace(self, lock=LeaseLock(client, self.namespace, self.id,
                                            self.identity or default_identity()))


def _noop_stopped() -> None:
    return None


def _noop_new_leader(identity: str) -> None:
    del identity


@dataclass(frozen=True)
class LeaderCallbacks:
    """What the elector calls.

    * ``on_started_leading(stop)`` runs in its own thread once the lock is held; it must
      return soon after ``stop`` is set (the elector keeps renewing until it does, on a clean
      stop).
    * ``on_stopped_leading()`` is called once when leadership ends (lost or stopped).
    * ``on_new_leader(identity)`` is called whenever the observed holder changes.
    """

    on_started_leading: Callable[[threading.Event], None]
    on_stopped_leading: Callable[[], None] = _noop_stopped
    on_new_leader: Callable[[str], None] = _noop_new_leader
