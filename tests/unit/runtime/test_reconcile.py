"""pyctrl.reconcile: Request, FuncReconciler, Requests end to end through a Controller; the
names of earlier drafts (RequestReconciler, EnqueueHandler) are gone."""

from __future__ import annotations

import dataclasses
import threading
import warnings
from collections.abc import Iterator

import pytest
import structlog
from prometheus_client import CollectorRegistry

import pyctrl
from pyctrl import builder, handlers
from pyctrl.cache import DeletedFinalStateUnknown
from pyctrl.controller import Controller
from pyctrl.kube.interface import RawObject
from pyctrl.reconcile import FuncReconciler, Reconciler, Request, Result, as_reconciler
from pyctrl.testing.fake_clock import FakeClock
from tests import threads
from tests.waiting import eventually


# -- Request -----------------------------------------------------------------------------------
def test_request_is_an_immutable_hashable_value() -> None:
    a, b = Request("ns", "a"), Request("ns", "a")
    assert a == b and hash(a) == hash(b) and len({a, b, Request("ns", "b")}) == 2
    with pytest.raises(AttributeError):
        a.name = "b"  # type: ignore[misc]
    assert (a.namespace, a.name) == ("ns", "a")


def test_request_str_is_the_client_go_key_and_from_key_is_its_inverse() -> None:
    assert str(Request("ns", "a")) == "ns/a" == Request("ns", "a").key
    assert str(Request("", "node-1")) == "node-1"
    for key in ("ns/a", "node-1"):
        assert str(Request.from_key(key)) == key
    assert Request.from_key("node-1") == Request("", "node-1")
    for bad in ("", "a/b/c", "ns/"):
        with pytest.raises(ValueError):
            Request.from_key(bad)


def test_request_from_object() -> None:
    assert Request.from_object({"metadata": {"name": "a", "namespace": "ns"}}) == \
        Request("ns", "a")
    assert Request.from_object({"metadata": {"name": "n"}}) == Request("", "n")


def test_result_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Result().requeue = True  # type: ignore[misc]


# -- function reconcilers ----------------------------------------------------------------------
def test_func_reconciler_calls_the_function_and_as_reconciler_accepts_both() -> None:
    seen: list[Request] = []

    def fn(request: Request) -> Result:
        seen.append(request)
        return Result(requeue_after=3)

    r = as_reconciler(fn)
    assert isinstance(r, FuncReconciler)
    assert r.reconcile(Request("ns", "a")) == Result(requeue_after=3)
    assert seen == [Request("ns", "a")]

    class Obj:
        def reconcile(self, request: Request) -> None:
            return None

    obj = Obj()
    assert as_reconciler(obj) is obj
    with pytest.raises(TypeError):
        as_reconciler(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        FuncReconciler("not a function")  # type: ignore[arg-type]


# -- Requests end to end through a Controller ----------------------------------------------------
class Recording:
    def __init__(self) -> None:
        self.requests: list[object] = []
        self.keys_logged: list[object] = []
        self._mu = threading.Lock()

    def reconcile(self, request: Request) -> Result | None:
        with self._mu:
            self.requests.append(request)
            self.keys_logged.append(structlog.contextvars.get_contextvars().get("key"))
        return Result(requeue_after=5) if request.name == "later" else None


@pytest.fixture
def running() -> Iterator[tuple[Controller[Request], Recording, FakeClock]]:
    clock = FakeClock()
    rec = Recording()
    controller = Controller("req", rec, clock=clock, registry=CollectorRegistry())
    with threads.running(controller.run, name="req-run", join_timeout=5):
        yield controller, rec, clock


def test_the_reconciler_receives_the_queued_request_itself(
        running: tuple[Controller[Request], Recording, FakeClock]) -> None:
    controller, rec, clock = running
    req = Request("ns", "a")
    controller.queue.add(req)
    eventually(lambda: len(rec.requests) == 1, what="reconciled")
    assert rec.requests[0] is req, "no key round trip: the very Request object"
    assert rec.keys_logged == ["ns/a"], "logs still carry the ns/name key"
    controller.queue.add(Request("ns", "later"))
    eventually(lambda: len(rec.requests) == 2, what="reconciled once")
    clock.step(5)
    eventually(lambda: rec.requests.count(Request("ns", "later")) == 2, what="requeued after")


# -- reconcilers without annotations ------------------------------------------------------------
def test_an_unannotated_reconcile_named_request_gets_the_request() -> None:
    class Untyped:
        got: object = None

        def reconcile(self, request):  # type: ignore[no-untyped-def]
            Untyped.got = request

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        controller: Controller[Request] = Controller("u", Untyped(), registry=CollectorRegistry())
    controller._process(Request("ns", "a"))
    controller.queue.shut_down()
    assert Untyped.got == Request("ns", "a")


def test_the_old_names_are_gone() -> None:
    for module, name in ((pyctrl, "RequestReconciler"), (builder, "RequestReconciler"),
                         (handlers, "EnqueueHandler")):
        assert not hasattr(module, name), name
    assert pyctrl.Request is Request and pyctrl.Result is Result
    assert pyctrl.Reconciler is Reconciler
    with pytest.raises(AttributeError):
        _ = pyctrl.NoSuchName  # type: ignore[attr-defined]


# -- the one mapper handler -------------------------------------------------------------------
class ListQueue:
    def __init__(self) -> None:
        self.items: list[Request] = []

    def add(self, item: Request) -> None:
        self.items.append(item)


def cm(name: str, rv: str = "1", owner: str | None = None) -> RawObject:
    md: dict[str, object] = {"name": name, "namespace": "ns", "resourceVersion": rv}
    if owner:
        md["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": owner,
                                  "uid": "u", "controller": True}]
    return {"metadata": md}


def test_map_handler_applies_predicates_once_per_event_then_maps() -> None:
    calls: list[str] = []

    def counted(kind: str) -> bool:
        calls.append(kind)
        return True

    def count(kind: str) -> handlers.Predicate:
        return handlers.Predicate(add=lambda o: counted(kind),
                                  update=lambda o, n: counted(kind),
                                  delete=lambda o: counted(kind))

    q = ListQueue()
    h = handlers.enqueue_requests(q, lambda o: [Request("x", o["metadata"]["name"]),
                                                Request("x", "shared")], [count("p")])
    h.on_add(cm("a"), False)
    h.on_update(cm("a"), cm("b", "2"))
    h.on_delete(DeletedFinalStateUnknown("ns/c", cm("c")))
    assert calls == ["p", "p", "p"], "each predicate once per event"
    assert q.items == [Request("x", "a"), Request("x", "shared"),  # add
                       Request("x", "a"), Request("x", "b"), Request("x", "shared"),  # update
                       Request("x", "c"), Request("x", "shared")]  # tombstone: last state


def test_map_handler_admit_and_a_failing_mapper() -> None:
    q = ListQueue()
    h = handlers.enqueue_owner(q, "v1", "ConfigMap", admit=lambda r: r.name != "theirs")
    h.on_add(cm("c1", owner="mine"), False)
    h.on_add(cm("c2", owner="theirs"), False)
    h.on_update(cm("c3", owner="old"), cm("c3", "2", owner="new"))  # owner: new object only
    assert q.items == [Request("ns", "mine"), Request("ns", "new")]

    def broken(obj: RawObject) -> list[Request]:
        raise RuntimeError("mapper bug")

    h2 = handlers.enqueue_requests(q, broken)
    h2.on_add(cm("a"), False)  # logged, dropped, never raised into the informer
    h2.on_delete(cm("a"))
    assert len(q.items) == 2
