"""The Manager's keyword arguments from before ManagerOptions, mapped onto the options.

Contract: :func:`options_from_keywords` turns the deprecated keyword arguments of
``Manager(client, **kwargs)`` into the :class:`~pyctrl.ManagerOptions` they always meant
(and warns once per call with the names used). Each old way of configuring leader election
becomes a :class:`~pyctrl.LeaderElectionOptions`:

* ``leader_election=LeaderElectionConfig(lock, ...)`` -> ``lock`` and the timing, ``id`` =
  the config's ``name``;
* ``leader_election_id=`` (+ ``leader_election_namespace``, ``leader_election_identity``)
  -> a Lease of that name (client-go's default timing).

``sharding=ShardingOptions(...)`` becomes the extension ``pyctrl.sharding.Sharding``
(:func:`deprecated_extensions`), whose default leader Lease is held as
``leader_election_identity`` (which alone configures no election, as before). Passing both
``options`` and deprecated keywords is a TypeError: there is one way to configure each thing.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

from pyctrl._manager_options import (
    HealthOptions,
    LeaderElectionOptions,
    ManagerOptions,
    MetricsOptions,
)
from pyctrl.leaderelection import LeaderElectionConfig
from pyctrl.serving import Authorizer

if TYPE_CHECKING:
    from pyctrl._extension import Extension
    from pyctrl.sharding import ShardingOptions

__all__ = ["LegacyManagerKeywords", "deprecated_attribute", "deprecated_extensions",
           "options_from_keywords"]


class LegacyManagerKeywords(TypedDict, total=False):
    """The deprecated keyword arguments of ``Manager`` (see module docstring)."""

    leader_election: LeaderElectionConfig | None
    leader_election_id: str | None
    leader_election_namespace: str
    leader_election_identity: str | None
    metrics_bind_address: str
    health_probe_bind_address: str
    graceful_shutdown_timeout: float
    namespace: str | None
    default_resync: float
    component: str
    event_queue_size: int
    metrics_secure: bool
    metrics_cert_dir: str | None
    metrics_auth: Authorizer | None
    runtime_metrics: bool
    sharding: ShardingOptions | None


def _leader_election(kw: LegacyManagerKeywords) -> LeaderElectionOptions | None:
    config = kw.get("leader_election")
    if config is not None:
        return LeaderElectionOptions(
            id=config.name, lock=config.lock, lease_duration=config.lease_duration,
            renew_deadline=config.renew_deadline, retry_period=config.retry_period,
            jitter_factor=config.jitter_factor, release_on_cancel=config.release_on_cancel)
    lease = kw.get("leader_election_id")
    if lease:
        return LeaderElectionOptions(id=lease,
                                     namespace=kw.get("leader_election_namespace", "default"),
                                     identity=kw.get("leader_election_identity"))
    return None


def options_from_keywords(options: ManagerOptions | None, kw: LegacyManagerKeywords,
                          *, stacklevel: int) -> ManagerOptions:
    """``options`` when no deprecated keyword is given, else the options they mean."""
    unknown = sorted(set(kw) - LegacyManagerKeywords.__optional_keys__)
    if unknown:
        raise TypeError(f"Manager() got unexpected keyword arguments: {', '.join(unknown)}")
    if not kw:
        return options or ManagerOptions()
    if options is not None:
        raise TypeError("pass ManagerOptions or the deprecated keyword arguments "
                        f"({', '.join(sorted(kw))}), not both")
    warnings.warn(f"Manager({', '.join(f'{k}=' for k in sorted(kw))}) is deprecated: pass "
                  "options=ManagerOptions(...) (see README, MIGRATION)", DeprecationWarning,
                  stacklevel=stacklevel + 1)
    base = ManagerOptions()
    metrics = MetricsOptions(
        bind_address=kw.get("metrics_bind_address", base.metrics.bind_address),
        secure=kw.get("metrics_secure", base.metrics.secure),
        cert_dir=kw.get("metrics_cert_dir", base.metrics.cert_dir),
        auth=kw.get("metrics_auth", base.metrics.auth),
        runtime_metrics=kw.get("runtime_metrics", base.metrics.runtime_metrics))
    return replace(
        base,
        leader_election=_leader_election(kw),
        metrics=metrics,
        health=HealthOptions(kw.get("health_probe_bind_address", base.health.bind_address)),
        namespace=kw.get("namespace", base.namespace),
        default_resync=kw.get("default_resync", base.default_resync),
        graceful_shutdown_timeout=kw.get("graceful_shutdown_timeout",
                                         base.graceful_shutdown_timeout),
        component=kw.get("component", base.component),
        event_queue_size=kw.get("event_queue_size", base.event_queue_size))


def deprecated_extensions(kw: LegacyManagerKeywords) -> list[Extension]:
    """The extensions the deprecated keywords ask for (``sharding=``)."""
    sharding = kw.get("sharding")
    if sharding is None:
        return []
    from pyctrl.sharding.extension import Sharding  # only on this deprecated path

    return [Sharding(sharding, identity=kw.get("leader_election_identity"))]


def deprecated_attribute(manager: object, name: str) -> object:
    """The Manager attributes of earlier releases: ``shard_elector`` (now ``controller_gate``)
    and ``sharding`` (the installed extension's options, or None); AttributeError else."""
    if name == "shard_elector":
        warnings.warn("Manager.shard_elector is deprecated: use Manager.controller_gate",
                      DeprecationWarning, stacklevel=3)
        return getattr(manager, "controller_gate", None)
    if name == "sharding":
        warnings.warn("Manager.sharding is deprecated: keep the Sharding extension you added",
                      DeprecationWarning, stacklevel=3)
        from pyctrl.sharding.extension import Sharding

        hooks = getattr(manager, "controller_hooks", ())
        return next((h.options for h in hooks if isinstance(h, Sharding)), None)
    raise AttributeError(f"{type(manager).__name__!r} object has no attribute {name!r}")
