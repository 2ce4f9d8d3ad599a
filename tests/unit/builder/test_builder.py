"""Builder: one chain wires informers, handlers, queue, clock and registry from the manager."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from structlog.testing import capture_logs

from pyctrl import Manager, ManagerOptions, MetricsOptions
from pyctrl.cache import CONTROLLER_UID_INDEX, DeletedFinalStateUnknown
from pyctrl.errors import NotFound
from pyctrl.extension import ControllerBuild, ExtensionHost, NoHook
from pyctrl.handlers import Predicate
from pyctrl.kube.interface import RawObject
from pyctrl.kube.resource import CONFIGMAPS, NAMESPACES, SECRETS, Resource
from pyctrl.reconcile import Request, Result
from pyctrl.testing import FakeClient, FakeClock
from pyctrl.workqueue import ItemExponentialFailureRateLimiter
from tests.unit.runtime.helpers import eventually

NO_RUNTIME_METRICS = ManagerOptions(metrics=MetricsOptions(runtime_metrics=False))


class Seen:
    """A reconciler that records the Requests it gets."""

    def __init__(self, result: Result | None = None) -> None:
        self.requests: list[Request] = []
        self.result = result
        self._mu = threading.Lock()

    def reconcile(self, request: Request) -> Result | None:
        with self._mu:
            self.requests.append(request)
        return self.result

    def names(self) -> set[str]:
        with self._mu:
            return {r.key for r in self.requests}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def client(clock: FakeClock) -> FakeClient:
    return FakeClient(clock)


@pytest.fixture
def manager(client: FakeClient, clock: FakeClock) -> Manager:
    return Manager(client, NO_RUNTIME_METRICS, clock=clock)


def cm(name: str, ns: str = "ns", **meta: Any) -> RawObject:
    return {"metadata": {"name": name, "namespace": ns, **meta}, "data": {"k": "v"}}


def owned_secret(name: str, owner: RawObject, *, kind: str = "ConfigMap") -> RawObject:
    md = owner["metadata"]
    return {"metadata": {"name": name, "namespace": md["namespace"], "ownerReferences": [
        {"apiVersion": "v1", "kind": kind, "name": md["name"], "uid": md["uid"],
         "controller": True}]}}


def test_request_key_and_from_key() -> None:
    assert Request("ns", "a").key == "ns/a"
    assert Request("", "node-1").key == "node-1"
    assert Request.from_key("ns/a") == Request("ns", "a")
    assert Request.from_key("node-1") == Request("", "node-1")
    assert str(Request("ns", "a")) == "ns/a"
    ns, name = Request("ns", "a")
    assert (ns, name) == ("ns", "a")
    with pytest.raises(ValueError):
        Request.from_key("a/b/c")


def test_for_and_owns_enqueue_the_object_and_its_controller_owner(
    client: FakeClient, manager: Manager, start: Callable[[], None]
) -> None:
    seen = Seen()
    controller = manager.controller("mirror", workers=2).for_(CONFIGMAPS).owns(SECRETS).complete(
        seen)
    assert controller.workers == 2
    owner = client.create(CONFIGMAPS, cm("owner"))
    client.create(SECRETS, owned_secret("child", owner))
    client.create(SECRETS, owned_secret("other", owner, kind="Deployment"))
    start()
    eventually(lambda: seen.names() == {"ns/owner"}, what="owner reconciled")
    secrets = manager.informers.informer_for(SECRETS)
    assert CONTROLLER_UID_INDEX in secrets.get_indexer().get_indexers()
    seen.requests.clear()
    child = client.get(SECRETS, "child", "ns")
    child["data"] = {"x": "eQ=="}
    client.update(SECRETS, child, "ns")
    eventually(lambda: seen.names() == {"ns/owner"}, what="owner re-reconciled on child update")
    assert all(isinstance(r, Request) for r in seen.requests)


def test_watches_maps_objects_to_many_requests_and_survives_a_failing_mapper(
    client: FakeClient, manager: Manager, start: Callable[[], None]
) -> None:
    seen = Seen()

    def mapper(obj: RawObject) -> list[Request]:
        if obj["metadata"]["name"] == "boom":
            raise RuntimeError("mapper bug")
        targets = obj.get("data", {}).get("targets", "").split(",")
        return [Request("ns", t) for t in targets if t]

    manager.controller("fanout").watches(CONFIGMAPS, mapper).complete(seen)
    client.create(CONFIGMAPS, cm("boom"))
    client.create(CONFIGMAPS, {"metadata": {"name": "index", "namespace": "ns"},
                               "data": {"targets": "a,b"}})
    start()
    eventually(lambda: seen.names() == {"ns/a", "ns/b"}, what="both targets")
    assert len(seen.requests) == 2


def test_event_filter_applies_to_every_watch(
    client: FakeClient, manager: Manager, start: Callable[[], None]
) -> None:
    seen = Seen()
    only_keep = Predicate(add=lambda o: o["metadata"].get("labels", {}).get("keep") == "yes")
    (manager.controller("filtered").for_(CONFIGMAPS).owns(SECRETS)
     .with_event_filter(only_keep).complete(seen))
    dropped = client.create(CONFIGMAPS, cm("dropped"))
    client.create(SECRETS, owned_secret("child-of-dropped", dropped))
    client.create(CONFIGMAPS, cm("kept", labels={"keep": "yes"}))
    ghost = {"metadata": {"name": "ghost", "namespace": "ns", "uid": "u-ghost"}}
    client.create(SECRETS, owned_secret("trigger", ghost) | {"metadata": {
        **owned_secret("trigger", ghost)["metadata"], "labels": {"keep": "yes"}}})
    start()
    # One worker, FIFO queue, one handler thread per informer: had "dropped" (via either
    # watch) been enqueued, it would have been reconciled before "kept" and "ghost".
    eventually(lambda: seen.names() >= {"ns/kept", "ns/ghost"}, what="kept objects")
    assert seen.names() == {"ns/kept", "ns/ghost"}


def test_plain_function_reconciler_and_manager_clock_and_registry(
    client: FakeClient, clock: FakeClock, manager: Manager, start: Callable[[], None]
) -> None:
    calls: list[Request] = []

    def reconcile(request: Request) -> Result:
        calls.append(request)
        return Result(requeue_after=60)

    manager.controller("fn").for_(CONFIGMAPS).complete(reconcile)
    client.create(CONFIGMAPS, cm("a"))
    start()
    eventually(lambda: len(calls) == 1, what="first reconcile")
    # requeue_after waits on the manager's (fake) clock: nothing until it is stepped.
    assert len(calls) == 1
    clock.step(61)
    eventually(lambda: len(calls) == 2, what="requeue after the fake clock stepped")
    assert calls == [Request("ns", "a")] * 2
    total = manager.registry.get_sample_value(
        "controller_runtime_reconcile_total", {"controller": "fn", "result": "requeue_after"})
    assert total is not None and total >= 1


def test_options_set_rate_limiter_and_namespaces(
    client: FakeClient, manager: Manager, start: Callable[[], None]
) -> None:
    seen = Seen()
    limiter = ItemExponentialFailureRateLimiter(0.5, 10.0)
    controller = (manager.controller("scoped").for_(CONFIGMAPS).owns(SECRETS)
                  .with_options(rate_limiter=limiter, namespaces=["a", "b"]).complete(seen))
    assert controller.queue.rate_limiter is limiter
    for ns in ("a", "b", "c"):
        client.create(NAMESPACES, {"metadata": {"name": ns}})
        client.create(CONFIGMAPS, cm("x", ns))
    start()
    eventually(lambda: seen.names() == {"a/x", "b/x"}, what="both watched namespaces")
    names = sorted(i.name for i in manager.informers.informers())
    assert names == ["configmaps@a", "configmaps@b", "secrets@a", "secrets@b"]


def test_misuse_is_reported_before_run(manager: Manager) -> None:
    with pytest.raises(ValueError, match="owns needs for_"):
        manager.controller("x").owns(SECRETS).complete(Seen())
    with pytest.raises(ValueError, match="watches nothing"):
        manager.controller("y").complete(Seen())
    with pytest.raises(TypeError):
        manager.controller("z").for_(CONFIGMAPS).complete(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        manager.controller("w").with_options(namespaces=[])
    builder = manager.controller("once").for_(CONFIGMAPS)
    controller = builder.complete(Seen())
    try:
        with pytest.raises(RuntimeError):
            builder.complete(Seen())
    finally:
        controller.queue.shut_down()  # the manager never ran: nobody else stops its queue


def test_run_warns_once_per_builder_never_completed(manager: Manager) -> None:
    manager.controller("done").for_(CONFIGMAPS).complete(Seen())
    manager.controller("forgotten").for_(CONFIGMAPS).owns(SECRETS)  # no .complete(...)
    manager.controller("also-forgotten").for_(SECRETS)
    stop = threading.Event()
    stop.set()  # run starts, warns, and shuts down at once
    with capture_logs() as logs:
        manager.run(stop)
    warned = [e["controller"] for e in logs if e["log_level"] == "warning"
              and "never completed" in e["event"]]
    assert warned == ["forgotten", "also-forgotten"]


# -- on_delete: an observer sees each delete before the owner is enqueued ------------------


def _owner_and_child(client: FakeClient) -> RawObject:
    owner = client.create(CONFIGMAPS, cm("owner"))
    client.create(SECRETS, owned_secret("child", owner))
    return owner


def test_on_delete_observer_runs_before_the_enqueue_and_before_predicates(
    client: FakeClient, manager: Manager, start: Callable[[], None]
) -> None:
    order: list[str] = []
    lock = threading.Lock()

    def observe(obj: RawObject | DeletedFinalStateUnknown) -> None:
        last = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        assert last is not None
        with lock:
            order.append(f"observed {last['metadata']['name']}")

    def reconcile(request: Request) -> None:
        with lock:
            order.append(f"reconciled {request.name}")

    never_on_delete = Predicate(delete=lambda o: o["metadata"]["name"] != "filtered")
    (manager.controller("observed").for_(CONFIGMAPS)
     .owns(SECRETS, on_delete=observe, predicates=[never_on_delete]).complete(reconcile))
    owner = _owner_and_child(client)
    client.create(SECRETS, owned_secret("filtered", owner))
    start()
    eventually(lambda: "reconciled owner" in order, what="first reconcile")
    client.delete(SECRETS, "filtered", "ns")  # observed, but its delete is filtered out
    eventually(lambda: "observed filtered" in order, what="filtered delete observed")
    client.delete(SECRETS, "child", "ns")

    def reconciled_after_child() -> bool:
        with lock:
            return "observed child" in order and order[-1] == "reconciled owner"

    eventually(reconciled_after_child, what="delete observed, then the owner reconciled")
    with lock:
        assert order.index("observed filtered") < order.index("observed child")


def test_a_failing_on_delete_observer_still_enqueues(
    client: FakeClient, manager: Manager, start: Callable[[], None]
) -> None:
    seen = Seen()

    def broken(obj: RawObject | DeletedFinalStateUnknown) -> None:
        raise RuntimeError("observer bug")

    manager.controller("broken").for_(CONFIGMAPS).owns(SECRETS, on_delete=broken).complete(seen)
    _owner_and_child(client)
    start()
    eventually(lambda: len(seen.requests) == 1, what="first reconcile")
    client.delete(SECRETS, "child", "ns")
    eventually(lambda: len(seen.requests) == 2, what="owner reconciled after the delete")


# -- lister_for / informers_for: the reconciler reads what the controller watches ----------


def test_lister_for_reads_the_watched_namespaces_selector_and_owner_index(
    client: FakeClient, manager: Manager, start: Callable[[], None]
) -> None:
    seen = Seen()
    builder = (manager.controller("reader").with_options(namespaces=["a", "b"])
               .for_(CONFIGMAPS, label_selector="keep=yes").owns(SECRETS))
    configmaps, secrets = builder.lister_for(CONFIGMAPS), builder.lister_for(SECRETS)
    informers = builder.informers_for(CONFIGMAPS)
    builder.complete(seen)
    assert [i.name for i in informers] == ["configmaps@a[keep=yes]", "configmaps@b[keep=yes]"]
    assert len(manager.informers.informers()) == 4  # shared with the watches, not copies
    owners = {}
    for ns in ("a", "b", "c"):
        client.create(NAMESPACES, {"metadata": {"name": ns}})
        owners[ns] = client.create(CONFIGMAPS, cm("x", ns, labels={"keep": "yes"}))
        client.create(SECRETS, owned_secret("s", owners[ns]))
    client.create(CONFIGMAPS, cm("unlabelled", "a"))
    start()
    eventually(lambda: seen.names() == {"a/x", "b/x"}, what="both namespaces reconciled")
    eventually(lambda: len(secrets.list()) == 2, what="secrets cached")
    assert configmaps.get("b", "x")["metadata"]["namespace"] == "b"
    assert sorted(o["metadata"]["name"] for o in configmaps.list()) == ["x", "x"]
    with pytest.raises(NotFound):
        configmaps.get("a", "unlabelled")
    with pytest.raises(NotFound):
        configmaps.get("c", "x")
    uid = owners["b"]["metadata"]["uid"]
    assert [o["metadata"]["namespace"] for o in secrets.by_index(CONTROLLER_UID_INDEX, uid)
            ] == ["b"]


def test_readers_handed_out_pin_their_informers(manager: Manager) -> None:
    builder = manager.controller("pinned").with_options(namespaces=["a"]).for_(CONFIGMAPS)
    builder.lister_for(SECRETS)  # undeclared: read whole in the controller's namespaces
    with pytest.raises(ValueError, match="label selector"):
        builder.owns(SECRETS, label_selector="x=y")
    builder.owns(SECRETS)  # the same informers: fine
    with pytest.raises(ValueError, match="namespaces"):
        builder.with_options(namespaces=["b"])
    builder.with_options(namespaces=["a"])  # unchanged: fine
    controller = builder.complete(Seen())
    controller.queue.shut_down()  # the manager never ran: nobody else stops its queue


def test_an_extension_shapes_controllers_through_the_typed_hook_api(
        manager: Manager) -> None:
    """The public extension API: install(host) gets the Manager as an ExtensionHost; a hook
    built on NoHook overrides only what it shapes (here the owned informers' selector)."""

    class OwnedOnly(NoHook):
        def owned_selector(self, build: ControllerBuild, resource: Resource) -> str | None:
            return "tier=owned" if resource == SECRETS else None

    class Install:
        def install(self, host: ExtensionHost) -> None:
            host.add_controller_hook(OwnedOnly())

    manager.add_extension(Install())
    builder = manager.controller("mirror").for_(CONFIGMAPS).owns(SECRETS)
    assert [i.name for i in builder.informers_for(SECRETS)] == ["secrets[tier=owned]"]
    assert [i.name for i in builder.informers_for(CONFIGMAPS)] == ["configmaps"]
    with pytest.raises(RuntimeError, match="before building controllers"):
        manager.add_extension(Install())  # a Builder read the hooks already
