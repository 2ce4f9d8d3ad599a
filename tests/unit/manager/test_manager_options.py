"""ManagerOptions: grouped, frozen, validated; the only way to configure a Manager (the
keyword arguments of earlier drafts are gone)."""

from __future__ import annotations

import dataclasses

import pytest

import pyctrl
import pyctrl.leaderelection
from pyctrl import (
    HealthOptions,
    LeaderElectionOptions,
    Manager,
    ManagerOptions,
    MetricsOptions,
)
from pyctrl.leaderelection import LeaderCallbacks, LeaderElector, LeaseLock
from pyctrl.testing import FakeClient, FakeClock
from pyctrl.testing.fake_lock import FakeLock, FakeLockStore


def test_options_are_frozen_and_documented_defaults_hold() -> None:
    opts = ManagerOptions()
    assert opts.leader_election is None
    assert opts.metrics == MetricsOptions(bind_address="0", secure=False, cert_dir=None,
                                          auth=None, runtime_metrics=True)
    assert opts.health == HealthOptions(bind_address="0")
    assert (opts.namespace, opts.default_resync, opts.graceful_shutdown_timeout,
            opts.component, opts.event_queue_size) == (None, 0.0, 30.0, "pyctrl", 10_000)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.component = "x"  # type: ignore[misc]
    le = LeaderElectionOptions(id="ctl")
    assert (le.namespace, le.lease_duration, le.renew_deadline, le.retry_period,
            le.jitter_factor, le.release_on_cancel, le.regain_after_fence, le.lock) == (
                "default", 15.0, 10.0, 2.0, 1.2, True, True, None)


@pytest.mark.parametrize(("make", "message"), [
    (LeaderElectionOptions, "id"),
    (lambda: LeaderElectionOptions(id="a", namespace=""), "namespace"),
    (lambda: LeaderElectionOptions(id="a", identity=""), "identity"),
    (lambda: LeaderElectionOptions(id="a", lease_duration=10), "lease_duration"),
    (lambda: LeaderElectionOptions(id="a", retry_period=0), "retry_period"),
    (lambda: LeaderElectionOptions(id="a", renew_deadline=2.1), "renew_deadline"),
    (lambda: MetricsOptions(bind_address="8080"), "metrics bind_address"),
    (lambda: HealthOptions(bind_address="localhost"), "health bind_address"),
    (lambda: ManagerOptions(default_resync=-1), "default_resync"),
    (lambda: ManagerOptions(graceful_shutdown_timeout=-1), "graceful_shutdown_timeout"),
    (lambda: ManagerOptions(component=""), "component"),
    (lambda: ManagerOptions(event_queue_size=0), "event_queue_size"),
])
def test_invalid_options_are_refused_naming_the_field(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()  # type: ignore[operator]


def test_leader_election_options_make_a_lease_or_use_the_given_lock() -> None:
    client = FakeClient()
    opts = LeaderElectionOptions(id="ctl", namespace="ops", identity="me", lease_duration=20)
    locked = opts.with_lock(client)
    assert isinstance(locked.lock, LeaseLock) and locked.lock.identity() == "me"
    assert locked == dataclasses.replace(opts, lock=locked.lock)  # the rest as given
    generated = LeaderElectionOptions(id="ctl").with_lock(client).lock
    assert generated is not None and "_" in generated.identity()  # <hostname>_<uuid>
    lock = FakeLock(FakeLockStore(), "you")
    with_lock = LeaderElectionOptions(lock=lock)
    assert with_lock.with_lock(client) is with_lock
    with pytest.raises(ValueError, match="lock"):
        LeaderElector(LeaderElectionOptions(id="ctl"), LeaderCallbacks(lambda stop: None))


def test_one_leader_election_settings_class() -> None:
    """The Manager's options and the elector's settings are one class (issue 36)."""
    assert pyctrl.leaderelection.LeaderElectionOptions is LeaderElectionOptions
    assert not hasattr(pyctrl.leaderelection, "LeaderElectionConfig")
    assert not hasattr(pyctrl, "LeaderElectionConfig")


def test_manager_reads_its_settings_from_the_options() -> None:
    opts = ManagerOptions(namespace="ns", default_resync=30, graceful_shutdown_timeout=3,
                          component="demo", event_queue_size=5,
                          metrics=MetricsOptions(runtime_metrics=False))
    m = Manager(FakeClient(), opts, clock=FakeClock())
    assert m.options is opts
    assert (m.informers.namespace, m.options.graceful_shutdown_timeout,
            m.options.component) == ("ns", 3, "demo")
    assert m.elector is None
    assert m.registry.get_sample_value("python_gc_duration_seconds_count",
                                       {"generation": "0"}) is None  # runtime metrics off


def test_options_are_the_only_way_to_configure_a_manager() -> None:
    for old in ({"component": "x"}, {"metrics_bind_address": ":9090"},
                {"leader_election_id": "ctl"}, {"sharding": None}):
        with pytest.raises(TypeError, match="unexpected keyword"):
            Manager(FakeClient(), **old)
    m = Manager(FakeClient(), ManagerOptions(metrics=MetricsOptions(runtime_metrics=False)))
    for attribute in ("shard_elector", "sharding"):
        assert not hasattr(m, attribute), attribute
