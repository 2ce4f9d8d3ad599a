"""ManagerOptions: grouped, frozen, validated; the old keyword arguments still work, mapped onto
the options with a DeprecationWarning; one way to configure each thing."""

from __future__ import annotations

import dataclasses

import pytest

from pyctrl import (
    HealthOptions,
    LeaderElectionConfig,
    LeaderElectionOptions,
    Manager,
    ManagerOptions,
    MetricsOptions,
)
from pyctrl.leaderelection import LeaseLock
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
            le.jitter_factor, le.release_on_cancel) == ("default", 15.0, 10.0, 2.0, 1.2, True)


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
    config = LeaderElectionOptions(id="ctl", namespace="ops", identity="me",
                                   lease_duration=20).config(client)
    assert isinstance(config.lock, LeaseLock) and config.lock.identity() == "me"
    assert (config.name, config.lease_duration, config.renew_deadline) == ("ctl", 20, 10)
    generated = LeaderElectionOptions(id="ctl").config(client).lock.identity()
    assert generated and "_" in generated  # <hostname>_<uuid>
    lock = FakeLock(FakeLockStore(), "you")
    assert LeaderElectionOptions(lock=lock).config(client).lock is lock


def test_manager_reads_its_settings_from_the_options() -> None:
    opts = ManagerOptions(namespace="ns", default_resync=30, graceful_shutdown_timeout=3,
                          component="demo", event_queue_size=5,
                          metrics=MetricsOptions(runtime_metrics=False))
    m = Manager(FakeClient(), opts, clock=FakeClock())
    assert m.options is opts
    assert (m.informers.namespace, m.graceful_shutdown_timeout, m.component) == ("ns", 3, "demo")
    assert m.elector is None
    assert m.registry.get_sample_value("python_gc_duration_seconds_count",
                                       {"generation": "0"}) is None  # runtime metrics off


def test_old_keyword_arguments_warn_and_mean_the_same_options() -> None:
    with pytest.warns(DeprecationWarning, match="metrics_bind_address=.*ManagerOptions"):
        m = Manager(FakeClient(), metrics_bind_address=":9090",
                    health_probe_bind_address="127.0.0.1:0", namespace="ns",
                    graceful_shutdown_timeout=3, component="demo", event_queue_size=7,
                    metrics_secure=True, metrics_cert_dir="/certs", runtime_metrics=False,
                    default_resync=5, leader_election_id="ctl",
                    leader_election_namespace="ops", leader_election_identity="me")
    assert m.options == ManagerOptions(
        leader_election=LeaderElectionOptions(id="ctl", namespace="ops", identity="me"),
        metrics=MetricsOptions(bind_address=":9090", secure=True, cert_dir="/certs",
                               runtime_metrics=False),
        health=HealthOptions(bind_address="127.0.0.1:0"), namespace="ns", default_resync=5,
        graceful_shutdown_timeout=3, component="demo", event_queue_size=7)
    assert m.elector is not None


def test_an_old_leader_election_config_keeps_its_lock_and_timing() -> None:
    lock = FakeLock(FakeLockStore(), "me")
    config = LeaderElectionConfig(lock, lease_duration=30, renew_deadline=20, retry_period=5,
                                  jitter_factor=1.5, name="ctl", release_on_cancel=False)
    with pytest.warns(DeprecationWarning):
        m = Manager(FakeClient(), leader_election=config)
    assert m.options.leader_election == LeaderElectionOptions(
        id="ctl", lock=lock, lease_duration=30, renew_deadline=20, retry_period=5,
        jitter_factor=1.5, release_on_cancel=False)


def test_options_and_old_keywords_together_are_refused() -> None:
    with pytest.raises(TypeError, match="not both"):
        Manager(FakeClient(), ManagerOptions(), component="x")
    with pytest.raises(TypeError, match="unexpected keyword"):
        Manager(FakeClient(), no_such_option=1)  # type: ignore[call-arg]
