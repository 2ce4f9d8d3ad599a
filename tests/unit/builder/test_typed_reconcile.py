"""Typed reconcile: the Builder takes kind classes (Resource and RBAC derived), a reconciler
gets the cached object typed (with_object), async reconcilers are refused when registered,
a reconcile sees shutdown (stopping()), predicates compose on dicts and typed objects."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

import pyctrl
from pyctrl import Manager, ManagerOptions, MetricsOptions, api
from pyctrl.controller import Controller
from pyctrl.handlers import Predicate
from pyctrl.testing import FakeClient
from tests.threads import running
from tests.unit.runtime.helpers import eventually

NO_RUNTIME_METRICS = ManagerOptions(metrics=MetricsOptions(runtime_metrics=False))


class GadgetSpec(api.Struct):
    size: int = 1


@api.kind("test.pyctrl.io/v1", "Gadget")
class Gadget(api.Object):
    spec: GadgetSpec = api.field(default_factory=GadgetSpec)


@api.kind("v1", "ConfigMap", status_subresource=False, builtin=True)
class ConfigMap(api.Object):
    data: dict[str, str] | None = None


GADGETS = api.resource_for(Gadget)


class Sizes:
    """An ObjectReconciler: records each Gadget's size, as handed in from the cache."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}
        self._mu = threading.Lock()

    def reconcile(self, request: pyctrl.Request, obj: Gadget) -> pyctrl.Result | None:
        with self._mu:
            self.seen[request.key] = obj.spec.size
        return None

    def snapshot(self) -> dict[str, int]:
        with self._mu:
            return dict(self.seen)


def test_for_and_owns_take_kind_classes_and_the_reconciler_gets_the_typed_object(
        client: FakeClient, manager: Manager, start: Callable[[], None]) -> None:
    builder = manager.controller("gadgets").for_(Gadget).owns(ConfigMap, writes=("create",))
    assert builder.for_resource == GADGETS
    assert builder.owned_resources == (pyctrl.CONFIGMAPS,)
    sizes = Sizes()
    builder.complete(pyctrl.with_object(builder.lister_for(Gadget), sizes))
    client.create(GADGETS, {"metadata": {"name": "a", "namespace": "ns"}, "spec": {"size": 3}})
    start()
    eventually(lambda: sizes.snapshot() == {"ns/a": 3}, what="typed reconcile")
    # What gen rbac reads: the kinds' Resources.
    declared = builder.rbac_declared()
    assert declared.for_ == GADGETS and dict(declared.owns) == {pyctrl.CONFIGMAPS: ("create",)}


def test_lister_for_a_kind_reads_the_typed_informers_the_watch_runs_on(
        client: FakeClient, manager: Manager, start: Callable[[], None]) -> None:
    builder = manager.controller("gadgets").for_(Gadget)
    typed = builder.lister_for(Gadget)
    (informer,) = builder.informers_for(Gadget)
    assert informer is builder.informers_for(GADGETS)[0] and informer.name == "gadgets:typed"
    builder.complete(lambda request: None)
    client.create(GADGETS, {"metadata": {"name": "a", "namespace": "ns", "labels": {"k": "v"}},
                            "spec": {"size": 2}})
    start()
    eventually(lambda: bool(typed.list()), what="cached")
    got = typed.get("ns", "a")
    assert isinstance(got, Gadget) and got.spec.size == 2
    cached: object = informer.get_store().get_by_key("ns/a")
    assert got is cached, "decoded once, shared"
    assert typed.list("ns", "k=v") == [got] and typed.list("ns", "k=w") == []


def test_with_object_skips_objects_the_cache_does_not_have() -> None:
    class Reader:
        def get(self, namespace: str | None, name: str) -> Gadget:
            if name != "there":
                raise pyctrl.NotFound("gone")
            return Gadget(metadata=api.ObjectMeta(name=name, namespace=namespace or ""))

    sizes = Sizes()
    run = pyctrl.with_object(Reader(), sizes)
    assert run.reconcile(pyctrl.Request("ns", "missing")) is None
    run.reconcile(pyctrl.Request("ns", "there"))
    assert sizes.snapshot() == {"ns/there": 1}


def test_async_reconcilers_are_refused_when_registered(manager: Manager) -> None:
    class Async:
        async def reconcile(self, request: pyctrl.Request) -> None:
            return None

    async def fn(request: pyctrl.Request) -> None:
        return None

    builder = manager.controller("async").for_(Gadget)
    with pytest.raises(TypeError, match=r"coroutine function.*not async def"):
        builder.complete(Async())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="coroutine function"):
        builder.complete(fn)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="coroutine function"):
        Controller("c", Async())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="coroutine function"):
        pyctrl.with_object(builder.lister_for(Gadget), Async())  # type: ignore[arg-type]
    assert not builder.completed


def test_a_reconcile_sees_shutdown_and_ends_cleanly() -> None:
    assert not pyctrl.stopping().is_set()  # outside a worker: never set
    started, ended = threading.Event(), threading.Event()

    class Long:
        def reconcile(self, request: pyctrl.Request) -> pyctrl.Result | None:
            started.set()
            stop = pyctrl.stopping()
            while not stop.wait(0.01):  # a long reconcile, step by step
                pass
            ended.set()
            return pyctrl.Result(requeue=True)

    controller = Controller[pyctrl.Request]("long", Long())
    controller.queue.add(pyctrl.Request("ns", "a"))
    with running(controller.run, name="long-run"):
        assert started.wait(10)
    assert ended.is_set()


def typed(name: str, generation: int, labels: dict[str, str],
          annotations: dict[str, str] | None = None) -> Gadget:
    return Gadget(metadata=api.ObjectMeta(name=name, generation=generation, labels=labels,
                                          annotations=annotations or {}))


def raw(name: str, generation: int, labels: dict[str, str],
        annotations: dict[str, str] | None = None) -> pyctrl.kube.RawObject:
    return {"metadata": {"name": name, "generation": generation, "labels": labels,
                         "annotations": annotations or {}}}


@pytest.mark.parametrize("make", [typed, raw])
def test_changed_predicates_read_dicts_and_typed_objects(make: Callable[..., object]) -> None:
    def update(p: Predicate, old: object, new: object) -> bool:
        assert p.update is not None
        return p.update(old, new)

    base = make("a", 1, {"x": "1"})
    assert not update(pyctrl.generation_changed, base, make("a", 1, {"x": "2"}))
    assert update(pyctrl.generation_changed, base, make("a", 2, {"x": "1"}))
    assert update(pyctrl.labels_changed, base, make("a", 1, {"x": "2"}))
    assert not update(pyctrl.labels_changed, base, make("a", 2, {"x": "1"}))
    assert update(pyctrl.annotations_changed, base, make("a", 1, {"x": "1"}, {"n": "y"}))
    assert not update(pyctrl.annotations_changed, base, make("a", 2, {"x": "1"}))
    selector = pyctrl.label_selector_predicate("x=1")
    assert selector.add is not None and selector.add(base)


def test_predicates_compose_with_and_or_not() -> None:
    base = raw("a", 1, {"x": "1"})
    spec_change, label_change = raw("a", 2, {"x": "1"}), raw("a", 1, {"x": "2"})
    either = pyctrl.generation_changed | pyctrl.labels_changed
    both = pyctrl.generation_changed & pyctrl.labels_changed
    neither = ~either
    assert either.update and both.update and neither.update
    assert either.update(base, spec_change) and either.update(base, label_change)
    assert not either.update(base, base)
    assert not both.update(base, spec_change) and both.update(base, raw("a", 2, {"x": "2"}))
    assert neither.update(base, base) and not neither.update(base, spec_change)
    # A missing hook passes: and keeps passing adds, not drops them (controller-runtime's Not).
    assert both.add is None and neither.add is not None and not neither.add(base)
    only_x = pyctrl.label_selector_predicate("x=1")
    combined = pyctrl.and_(only_x, pyctrl.not_(pyctrl.label_selector_predicate("y=1")))
    assert combined.add is not None and combined.add(base)
    assert not combined.add(raw("a", 1, {"x": "1", "y": "1"}))
    assert pyctrl.or_(only_x, Predicate()).add is not None
