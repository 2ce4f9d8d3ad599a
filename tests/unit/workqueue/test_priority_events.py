"""Priorities from informer events: handlers, the Builder option and plain-queue compatibility."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyctrl import Manager, ManagerOptions, MetricsOptions
from pyctrl.handlers import enqueue_object, enqueue_owner, enqueue_requests
from pyctrl.kube.interface import RawObject
from pyctrl.kube.resource import CONFIGMAPS
from pyctrl.reconcile import Request
from pyctrl.testing import FakeClient, FakeClock
from pyctrl.workqueue import (
    LOW_PRIORITY,
    NORMAL_PRIORITY,
    ItemExponentialFailureRateLimiter,
    PriorityQueue,
    RateLimitingQueue,
)
from tests.threads import Runner, start_manager
from tests.waiting import eventually

NO_RUNTIME_METRICS = ManagerOptions(metrics=MetricsOptions(runtime_metrics=False))

Make = Callable[..., Any]


def cm(name: str, rv: str = "1", **meta: Any) -> RawObject:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, **meta}}


def owned(name: str, owner: str, rv: str = "1") -> RawObject:
    return cm(name, rv, ownerReferences=[
        {"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": "u", "controller": True}])


@pytest.fixture
def pq(make: Make, clock: FakeClock) -> PriorityQueue[Request]:
    q: PriorityQueue[Request] = make(PriorityQueue, clock=clock)
    return q


def test_enqueue_object_priorities(pq: PriorityQueue[Request]) -> None:
    h = enqueue_object(pq)
    h.on_add(cm("listed"), True)
    h.on_add(cm("created"), False)
    h.on_update(cm("resynced", "5"), cm("resynced", "5"))
    h.on_update(cm("changed", "5"), cm("changed", "6"))
    h.on_delete(cm("deleted"))
    assert {k: pq.priority_of(Request.from_key(k)) for k in (
        "ns/listed", "ns/created", "ns/resynced", "ns/changed", "ns/deleted")} == {
        "ns/listed": LOW_PRIORITY, "ns/created": NORMAL_PRIORITY,
        "ns/resynced": LOW_PRIORITY, "ns/changed": NORMAL_PRIORITY,
        "ns/deleted": NORMAL_PRIORITY}
    # A real change to an object still queued from the initial list moves it up.
    h.on_update(cm("listed", "1"), cm("listed", "2"))
    assert pq.priority_of(Request("ns", "listed")) == NORMAL_PRIORITY


def test_enqueue_object_status_only_updates_are_low(pq: PriorityQueue[Request]) -> None:
    """The follow-up of a controller's own status write waits behind real changes."""
    h = enqueue_object(pq)

    def gen(name: str, rv: str, **extra: Any) -> RawObject:
        return cm(name, rv, generation=3, **extra)

    h.on_update(gen("status", "5"), {**gen("status", "6"), "status": {"x": 1}})
    h.on_update(gen("spec", "5"), cm("spec", "6", generation=4))
    h.on_update(gen("label", "5"), gen("label", "6", labels={"a": "b"}))
    h.on_update(gen("fin", "5"), gen("fin", "6", finalizers=["f"]))
    h.on_update(gen("deleting", "5"), gen("deleting", "6", deletionTimestamp="t"))
    h.on_update(cm("nogen", "5"), cm("nogen", "6"))  # no generation: never status-only
    assert {n: pq.priority_of(Request("ns", n)) for n in (
        "status", "spec", "label", "fin", "deleting", "nogen")} == {
        "status": LOW_PRIORITY, "spec": NORMAL_PRIORITY, "label": NORMAL_PRIORITY,
        "fin": NORMAL_PRIORITY, "deleting": NORMAL_PRIORITY, "nogen": NORMAL_PRIORITY}


def test_enqueue_owner_priorities(pq: PriorityQueue[Request]) -> None:
    h = enqueue_owner(pq, "v1", "ConfigMap")
    h.on_add(owned("c1", "o1"), True)
    h.on_update(owned("c2", "o2", "3"), owned("c2", "o2", "3"))
    h.on_add(owned("c3", "o3"), False)
    # A child's status-only change is its owner's input: NORMAL.
    old, new = owned("c4", "o4", "3"), owned("c4", "o4", "4")
    old["metadata"]["generation"] = new["metadata"]["generation"] = 1
    new["status"] = {"done": True}
    h.on_update(old, new)
    assert pq.priority_of(Request("ns", "o1")) == LOW_PRIORITY
    assert pq.priority_of(Request("ns", "o2")) == LOW_PRIORITY
    assert pq.priority_of(Request("ns", "o3")) == NORMAL_PRIORITY
    assert pq.priority_of(Request("ns", "o4")) == NORMAL_PRIORITY


def test_map_handler_priorities(pq: PriorityQueue[Request]) -> None:
    h = enqueue_requests(pq, lambda obj: [Request("ns", "m-" + obj["metadata"]["name"])])
    h.on_add(cm("a"), True)
    h.on_update(cm("b", "2"), cm("b", "2"))
    h.on_update(cm("c", "2"), cm("c", "3"))
    assert pq.priority_of(Request("ns", "m-a")) == LOW_PRIORITY
    assert pq.priority_of(Request("ns", "m-b")) == LOW_PRIORITY
    assert pq.priority_of(Request("ns", "m-c")) == NORMAL_PRIORITY


class PlainQueue:
    """A queue written before priorities existed: ``add(item)`` and nothing else."""

    def __init__(self) -> None:
        self.added: list[str] = []

    def add(self, item: Request) -> None:
        self.added.append(str(item))


def test_queues_without_priorities_get_plain_adds(make: Make, clock: FakeClock) -> None:
    plain = PlainQueue()
    for h in (enqueue_object(plain), enqueue_owner(plain, "v1", "ConfigMap"),
              enqueue_requests(plain, lambda obj: [Request("ns", "m")])):
        h.on_add(owned("c", "o"), True)
        h.on_update(owned("c", "o", "2"), owned("c", "o", "2"))
    assert plain.added == ["ns/c", "ns/c", "ns/o", "ns/o", "ns/m", "ns/m"]
    rl: RateLimitingQueue[Request] = make(RateLimitingQueue, clock=clock)
    enqueue_object(rl).on_add(cm("x"), True)
    assert rl.get() == Request("ns", "x")


# -- end to end: a Builder with priority_queue=True on a FakeClient ------------------------
@pytest.fixture
def client(clock: FakeClock) -> FakeClient:
    return FakeClient(clock)


@pytest.fixture
def manager(client: FakeClient, clock: FakeClock) -> Manager:
    return Manager(client, NO_RUNTIME_METRICS, clock=clock)


@pytest.fixture
def run(manager: Manager) -> Iterator[Callable[[], None]]:
    started: list[Runner] = []

    def start() -> None:
        started.append(start_manager(manager))

    yield start
    for runner in started:
        runner.shutdown()


def new_cm(name: str) -> RawObject:
    return {"metadata": {"name": name, "namespace": "ns"}}


def test_builder_option_serves_a_create_before_the_initial_list(
    client: FakeClient, manager: Manager, run: Callable[[], None]
) -> None:
    for i in range(5):
        client.create(CONFIGMAPS, new_cm(f"listed-{i}"))
    gate = threading.Event()
    order: list[str] = []

    def reconcile(request: Request) -> None:
        order.append(request.name)
        gate.wait(10)

    limiter = ItemExponentialFailureRateLimiter(0.5, 10.0)
    controller = (manager.controller("prio").for_(CONFIGMAPS)
                  .with_options(priority_queue=True, rate_limiter=limiter).complete(reconcile))
    q = controller.queue
    assert isinstance(q, PriorityQueue)
    assert q.rate_limiter is limiter
    run()
    try:
        # One initial item is in the (blocked) worker, the other four wait at LOW priority.
        eventually(lambda: len(order) == 1 and len(q) == 4)
        assert all(q.priority_of(Request("ns", f"listed-{i}")) in (LOW_PRIORITY, None)
                   for i in range(5))
        client.create(CONFIGMAPS, new_cm("created"))
        eventually(lambda: len(q) == 5)
    finally:
        gate.set()
    eventually(lambda: len(order) == 6)
    assert order[1] == "created"


def test_builder_default_queue_is_unchanged(manager: Manager) -> None:
    controller = manager.controller("plain").for_(CONFIGMAPS).complete(lambda r: None)
    assert type(controller.queue) is RateLimitingQueue
    controller.queue.shut_down()
