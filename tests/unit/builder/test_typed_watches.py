"""A watch declared with a kind class runs on the factory's typed informers: its handlers,
mappers, predicates and delete observers, and ``lister_for(Kind)`` (with the controller-UID
index), see frozen typed objects; a Resource watch keeps dicts; one resource has one form
per controller, and two controllers may watch it in different forms (two informers)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import pyctrl
from pyctrl import Manager, ManagerOptions, MetricsOptions, api
from pyctrl.cache import CONTROLLER_UID_INDEX, DeletedFinalStateUnknown
from pyctrl.handlers import Predicate
from pyctrl.kube import CONFIGMAPS, JOBS
from pyctrl.models.batch_v1 import Job
from pyctrl.models.core_v1 import ConfigMap
from pyctrl.testing import FakeClient
from tests.unit.runtime.helpers import eventually

NO_RUNTIME_METRICS = ManagerOptions(metrics=MetricsOptions(runtime_metrics=False))
NS = "ns"


class GadgetSpec(api.Struct):
    size: int = 1


@api.kind("test.pyctrl.io/v1", "Gadget")
class Gadget(api.Object):
    spec: GadgetSpec = api.field(default_factory=GadgetSpec)


GADGETS = api.resource_for(Gadget)


class Record:
    """What each hook of a controller was handed: (where, object type name)."""

    def __init__(self) -> None:
        self._mu = threading.Lock()
        self.seen: list[tuple[str, str]] = []
        self.objects: list[Any] = []

    def __call__(self, where: str, obj: object) -> None:
        with self._mu:
            self.seen.append((where, type(obj).__name__))
            self.objects.append(obj)

    def kinds(self, where: str) -> set[str]:
        with self._mu:
            return {t for w, t in self.seen if w == where}


def gadget(client: FakeClient, name: str = "g") -> dict[str, Any]:
    return client.create(GADGETS, {"metadata": {"name": name, "namespace": NS},
                                   "spec": {"size": 2}})


def job_of(owner: dict[str, Any], name: str = "j") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "ownerReferences": [
        {"apiVersion": "test.pyctrl.io/v1", "kind": "Gadget", "name": owner["metadata"]["name"],
         "uid": owner["metadata"]["uid"], "controller": True}]}}


def test_typed_watches_hand_typed_objects_to_handlers_and_listers(
        client: FakeClient, manager: Manager, start: Callable[[], None]) -> None:
    record = Record()

    def seen(where: str) -> Predicate:
        def passes(obj: object) -> bool:
            record(where, obj)
            return True

        return Predicate(add=passes)

    def by_data(cm: ConfigMap) -> list[pyctrl.Request]:
        record("mapper", cm)
        return [pyctrl.Request(cm.metadata.namespace, (cm.data or {}).get("gadget", ""))]

    class Reconciler:
        def reconcile(self, request: pyctrl.Request, obj: Gadget) -> None:
            record("reconcile", obj)

    builder = (manager.controller("gadgets")
               .for_(Gadget, predicates=[seen("for")])
               .owns(Job, predicates=[seen("owns")])
               .watches(ConfigMap, by_data, predicates=[seen("watches")]))
    gadgets, jobs = builder.lister_for(Gadget), builder.lister_for(Job)
    builder.complete(pyctrl.with_object(gadgets, Reconciler()))
    owner = gadget(client)
    client.create(JOBS, job_of(owner))
    client.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": NS},
                               "data": {"gadget": "g"}})
    start()
    eventually(lambda: all(record.kinds(w) for w in ("for", "owns", "watches", "mapper",
                                                     "reconcile")), what="every hook ran")
    assert record.kinds("for") == record.kinds("reconcile") == {"Gadget"}
    assert record.kinds("owns") == {"Job"}
    assert record.kinds("watches") == record.kinds("mapper") == {"ConfigMap"}
    # the listers read the very informers the watches run on: typed, indexed by owner
    got = gadgets.get(NS, "g")
    assert isinstance(got, Gadget) and got.spec.size == 2
    assert any(obj is got for obj in record.objects), "the handlers' object, not a copy"
    [owned] = jobs.by_index(CONTROLLER_UID_INDEX, owner["metadata"]["uid"])
    assert isinstance(owned, Job) and owned.metadata.name == "j"
    assert [i.name for i in builder.informers_for(GADGETS)] == ["gadgets:typed"]


def test_a_typed_delete_observer_sees_the_typed_object_before_the_owner_is_enqueued(
        client: FakeClient, manager: Manager, start: Callable[[], None]) -> None:
    observed: list[Job | DeletedFinalStateUnknown] = []
    reconciled: list[int] = []

    def observe(job: Job | DeletedFinalStateUnknown) -> None:
        observed.append(job)

    def reconcile(request: pyctrl.Request) -> None:
        reconciled.append(len(observed))

    builder = manager.controller("gadgets").for_(Gadget).owns(Job, on_delete=observe)
    builder.complete(reconcile)
    owner = gadget(client)
    client.create(JOBS, job_of(owner))
    start()
    eventually(lambda: len(builder.lister_for(Job).list()) == 1, what="job cached")
    client.delete(JOBS, "j", NS)
    eventually(lambda: bool(observed) and reconciled[-1:] == [1], what="delete observed")
    [job] = observed
    assert isinstance(job, Job) and job.metadata.name == "j"


def test_one_form_per_resource_in_a_controller() -> None:
    manager = Manager(FakeClient(), NO_RUNTIME_METRICS)
    builder = manager.controller("gadgets").for_(Gadget)
    with pytest.raises(ValueError, match="declares gadgets as Gadget"):
        builder.lister_for(GADGETS)
    with pytest.raises(ValueError, match="declares gadgets as Gadget"):
        builder.watches(GADGETS, lambda obj: ())
    builder.owns(JOBS)
    with pytest.raises(ValueError, match="declares jobs as the Resource"):
        builder.owns(Job)
    with pytest.raises(ValueError, match="metadata_only watches dicts"):
        builder.watches(ConfigMap, lambda obj: (), metadata_only=True)
    builder.watches(CONFIGMAPS, lambda obj: (), metadata_only=True)  # no form claimed above
    # informers_for of a Resource follows the form declared
    assert [i.name for i in builder.informers_for(GADGETS)] == ["gadgets:typed"]
    assert [i.name for i in builder.informers_for(JOBS)] == ["jobs"]


def test_two_controllers_may_watch_one_resource_typed_and_raw(
        client: FakeClient, manager: Manager, start: Callable[[], None]) -> None:
    typed_seen, raw_seen = Record(), Record()

    class Typed:
        def reconcile(self, request: pyctrl.Request, obj: Job) -> None:
            typed_seen("reconcile", obj)

    typed = manager.controller("typed").for_(Job)
    typed.complete(pyctrl.with_object(typed.lister_for(Job), Typed()))
    raw = manager.controller("raw").for_(GADGETS).owns(JOBS, on_delete=lambda obj: None)
    raw_jobs = raw.lister_for(JOBS)
    raw.complete(lambda request: raw_seen("reconcile", raw_jobs.list()[0]))
    client.create(JOBS, job_of(gadget(client)))
    start()
    eventually(lambda: bool(typed_seen.seen and raw_seen.seen), what="both reconciled")
    assert typed_seen.kinds("reconcile") == {"Job"} and raw_seen.kinds("reconcile") == {"dict"}
    assert sorted(i.name for i in manager.informers.informers()
                  if i.name.startswith("jobs")) == ["jobs", "jobs:typed"]
