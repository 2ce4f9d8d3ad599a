"""Manager: probes, metrics, controllers gated by leadership, clean shutdown (no threads)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyctrl.controller import Controller
from pyctrl.errors import ServerError
from pyctrl.handlers import enqueue_object
from pyctrl.kube.resource import CONFIGMAPS
from pyctrl.leaderelection import LeaderElectionRecord
from pyctrl.manager import (
    HealthOptions,
    LeaderElectionLost,
    LeaderElectionOptions,
    Manager,
    ManagerOptions,
    MetricsOptions,
)
from pyctrl.reconcile import Request, Result
from pyctrl.testing.fake_client import FakeClient
from pyctrl.testing.fake_clock import FakeClock
from pyctrl.testing.fake_lock import FakeLock, FakeLockStore
from tests.threads import Runner, start_manager
from tests.unit.manager.helpers import http_get
from tests.unit.runtime.helpers import step_until
from tests.waiting import eventually


@dataclass
class Recorder:
    keys: list[str] = field(default_factory=list)

    def reconcile(self, request: Request) -> Result | None:
        self.keys.append(str(request))
        return None


def build(client: FakeClient, election: LeaderElectionOptions | None = None,
          clock: FakeClock | None = None) -> tuple[Manager, Recorder]:
    mgr = Manager(client, ManagerOptions(
        leader_election=election, metrics=MetricsOptions(bind_address="127.0.0.1:0"),
        health=HealthOptions(bind_address="127.0.0.1:0")), clock=clock)
    rec = Recorder()
    ctrl = Controller("cm", rec, registry=mgr.registry, clock=mgr.clock)
    informer = mgr.informers.informer_for(CONFIGMAPS, namespace="ns")
    informer.add_event_handler(enqueue_object(ctrl.queue))
    mgr.add_controller(ctrl)
    return mgr, rec


def test_runs_controllers_serves_probes_and_metrics_then_stops_cleanly(
    runners: list[Runner],
) -> None:
    client = FakeClient()
    client.create(CONFIGMAPS, {"metadata": {"name": "a"}}, "ns")
    mgr, rec = build(client)
    r = start_manager(mgr)
    runners.append(r)
    eventually(lambda: rec.keys == ["ns/a"], what="reconciled")
    assert http_get(mgr, "/readyz") == (200, "ok")
    assert http_get(mgr, "/healthz") == (200, "ok")
    code, body = http_get(mgr, "/readyz?verbose")
    assert code == 200 and "[+]informers-synced ok" in body and "[+]ping ok" in body
    assert http_get(mgr, "/readyz/informers-synced") == (200, "ok")
    assert http_get(mgr, "/readyz/nope")[0] == 404
    code, metrics = http_get(mgr, "/metrics")
    assert code == 200
    assert 'controller_runtime_reconcile_total{controller="cm",result="success"} 1.0' in metrics
    r.shutdown()
    assert r.error is None


def test_failing_check_makes_probe_fail(runners: list[Runner]) -> None:
    mgr, _ = build(FakeClient())
    mgr.add_healthz_check("disk", lambda: "disk full")
    r = start_manager(mgr)
    runners.append(r)
    code, body = http_get(mgr, "/healthz")
    assert code == 500 and "[-]disk failed: disk full" in body
    assert http_get(mgr, "/healthz/ping") == (200, "ok")


def _election(store: FakeLockStore, identity: str = "me", *,
              regain: bool = True) -> LeaderElectionOptions:
    return LeaderElectionOptions(id="mgr", lock=FakeLock(store, identity), lease_duration=15,
                                 renew_deadline=10, retry_period=2, jitter_factor=1.0,
                                 regain_after_fence=regain)


def test_workers_run_only_while_leading_and_lease_is_released_on_stop(
    runners: list[Runner],
) -> None:
    clock = FakeClock()
    store = FakeLockStore()
    now = datetime(2026, 1, 1, tzinfo=UTC)
    store.record = LeaderElectionRecord("other", 15, now, now)
    client = FakeClient()
    client.create(CONFIGMAPS, {"metadata": {"name": "a"}}, "ns")
    mgr, rec = build(client, _election(store), clock)
    r = start_manager(mgr)
    runners.append(r)
    eventually(lambda: http_get(mgr, "/readyz")[0] == 200, what="caches warm without leading")
    assert rec.keys == []
    assert mgr.elector is not None and not mgr.elector.is_leader()
    # The other holder stops renewing; we take over 15 s after the elector first saw its
    # record, so wait for that sight before stepping: the elector's thread may first run
    # after a step or two, and then 16 s of steps were too few (2 of 11 runs at load 11).
    eventually(lambda: mgr.elector is not None and mgr.elector.get_leader() == "other",
               what="the other holder's record observed")
    elector = mgr.elector
    step_until(clock, elector.is_leader, what="leading once the other's lease expired")
    eventually(lambda: rec.keys == ["ns/a"], what="reconciled once leading")
    r.shutdown()
    assert r.error is None
    assert store.holder() == "", "lease released on clean stop"


def test_losing_leadership_stops_workers_and_raises(runners: list[Runner]) -> None:
    clock = FakeClock()
    store = FakeLockStore()
    mgr, _ = build(FakeClient(), _election(store, regain=False), clock)
    r = start_manager(mgr)
    runners.append(r)
    assert mgr.elector is not None
    eventually(mgr.elector.is_leader, what="leading")
    store.fail_with = ServerError("apiserver down", 503)
    for _ in range(6):
        clock.step(2)
        if not r.thread.is_alive():
            break
        eventually(lambda: clock.waiters() >= 1 or not r.thread.is_alive())
    r.thread.join(10)
    assert not r.thread.is_alive()
    assert isinstance(r.error, LeaderElectionLost)
    assert store.holder() == "me", "a lost lease is never written"


def test_an_outage_past_the_renew_deadline_fences_then_regains_the_lease(
    runners: list[Runner],
) -> None:
    # Issue 35 item 1: with the default regain_after_fence the replica does not exit when
    # an apiserver outage outlasts its renew deadline; it takes the lease back (still naming
    # it) when the server answers, and steps down only once another replica holds it.
    clock = FakeClock()
    store = FakeLockStore()
    mgr, _ = build(FakeClient(), _election(store), clock)
    r = start_manager(mgr)
    runners.append(r)
    elector = mgr.elector
    assert elector is not None
    eventually(elector.is_leader, what="leading")
    store.fail_with = ServerError("apiserver down", 503)
    for _ in range(10):  # 20 s of outage, past the 10 s renew deadline
        eventually(lambda: clock.waiters() >= 1)
        clock.step(2)
    step_until(clock, lambda: not elector.holds_lease(), what="fenced")
    assert r.thread.is_alive(), "the outage alone does not end the process"
    store.fail_with = None
    step_until(clock, elector.holds_lease, what="the lease renewed once the server answers")
    assert r.thread.is_alive()
    now = datetime(2026, 1, 1, tzinfo=UTC)
    store.fail_with = ServerError("apiserver down", 503)
    for _ in range(6):
        eventually(lambda: clock.waiters() >= 1)
        clock.step(2)
    step_until(clock, lambda: not elector.holds_lease(), what="fenced again")
    store.fail_with = None
    store.record = LeaderElectionRecord("other", 15, now, now)  # taken over meanwhile
    store.version += 1  # as a real write by another replica does
    step_until(clock, lambda: not r.thread.is_alive(), what="the manager ended")
    r.thread.join(10)
    assert not r.thread.is_alive()
    assert isinstance(r.error, LeaderElectionLost)
    assert store.holder() == "other", "nothing written over the new holder"
