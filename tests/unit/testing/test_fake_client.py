"""FakeClient behaves like the API server for the calls controllers make."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pyctrl.errors import AlreadyExists, BadRequest, Conflict, Gone, Invalid, NotFound
from pyctrl.kube.interface import RawObject, WatchEvent, WatchStream
from pyctrl.kube.resource import CONFIGMAPS, JOBS, NAMESPACES, Resource
from pyctrl.testing.fake_client import Action, FakeClient
from pyctrl.testing.fake_clock import FakeClock

CRONJOBS = Resource("batch.pyctrl.io", "v1", "cronjobs", "CronJob")


def cm(name: str, ns: str = "default", **data: str) -> RawObject:
    return {"metadata": {"name": name, "namespace": ns}, "data": dict(data)}


def job(name: str, ns: str = "default", **labels: str) -> RawObject:
    return {"metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
            "spec": {"parallelism": 1}}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fake(clock: FakeClock) -> FakeClient:
    return FakeClient(clock)


class Reader:
    """Drains a watch stream on a named thread; joined by ``stop``."""

    def __init__(self, stream: WatchStream) -> None:
        self.stream = stream
        self.events: list[WatchEvent] = []
        self.cond = threading.Condition()
        self.done = False
        self.thread = threading.Thread(target=self._run, name="fake-watch-reader")
        self.thread.start()

    def _run(self) -> None:
        for event in self.stream:
            with self.cond:
                self.events.append(event)
                self.cond.notify_all()
        with self.cond:
            self.done = True
            self.cond.notify_all()

    def wait_for(self, count: int) -> list[WatchEvent]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.events) >= count, 5.0), self.events
            return list(self.events)

    def wait_done(self) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: self.done, 5.0)

    def stop(self) -> None:
        self.stream.close()
        self.thread.join(5.0)
        assert not self.thread.is_alive()


def types(events: list[WatchEvent]) -> list[str]:
    return [e["type"] for e in events]


# -- create / get ------------------------------------------------------------------------
def test_create_sets_server_fields(fake: FakeClient, clock: FakeClock) -> None:
    created = fake.create(CONFIGMAPS, cm("a", x="1"))
    meta = created["metadata"]
    assert created["apiVersion"] == "v1" and created["kind"] == "ConfigMap"
    assert meta["resourceVersion"] == "1" and meta["generation"] == 1
    assert meta["uid"] and meta["namespace"] == "default"
    assert meta["creationTimestamp"] == clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    assert fake.get(CONFIGMAPS, "a", "default") == created


def test_resource_version_is_cluster_global(fake: FakeClient) -> None:
    fake.create(CONFIGMAPS, cm("a"))
    j = fake.create(JOBS, job("j"))
    ns = fake.create(NAMESPACES, {"metadata": {"name": "prod"}})
    assert (j["metadata"]["resourceVersion"], ns["metadata"]["resourceVersion"]) == ("2", "3")
    assert "namespace" not in ns["metadata"]
    assert fake.resource_version == "3"


def test_create_existing_name_is_already_exists(fake: FakeClient) -> None:
    fake.create(CONFIGMAPS, cm("a"))
    with pytest.raises(AlreadyExists) as err:
        fake.create(CONFIGMAPS, cm("a"))
    assert err.value.code == 409 and err.value.details["name"] == "a"


def test_create_without_name_is_invalid(fake: FakeClient) -> None:
    with pytest.raises(Invalid) as err:
        fake.create(CONFIGMAPS, {"metadata": {"namespace": "default"}})
    assert [c.field for c in err.value.causes] == ["metadata.name"]


def test_generate_name_makes_unique_names(fake: FakeClient) -> None:
    names = {fake.create(JOBS, {"metadata": {"generateName": "run-", "namespace": "d"}})
             ["metadata"]["name"] for _ in range(20)}
    assert len(names) == 20 and all(n.startswith("run-") and len(n) == 9 for n in names)


def test_namespace_mismatch_is_bad_request(fake: FakeClient) -> None:
    with pytest.raises(BadRequest):
        fake.create(CONFIGMAPS, cm("a", ns="one"), namespace="two")


def test_get_missing_is_not_found_and_returns_copies(fake: FakeClient) -> None:
    with pytest.raises(NotFound) as err:
        fake.get(JOBS, "nope", "default")
    assert str(err.value).endswith('jobs.batch "nope" not found')
    fake.create(CONFIGMAPS, cm("a", x="1"))
    got = fake.get(CONFIGMAPS, "a", "default")
    got["data"]["x"] = "mutated"
    assert fake.get(CONFIGMAPS, "a", "default")["data"]["x"] == "1"


# -- update / status ---------------------------------------------------------------------
def test_update_with_stale_resource_version_conflicts(fake: FakeClient) -> None:
    first = fake.create(CONFIGMAPS, cm("a", x="1"))
    second = fake.update(CONFIGMAPS, {**first, "data": {"x": "2"}})
    assert second["metadata"]["resourceVersion"] == "2"
    with pytest.raises(Conflict):
        fake.update(CONFIGMAPS, {**first, "data": {"x": "3"}})
    unconditional = {**first, "metadata": {**first["metadata"], "resourceVersion": ""},
                     "data": {"x": "4"}}
    assert fake.update(CONFIGMAPS, unconditional)["data"] == {"x": "4"}


def test_update_missing_is_not_found(fake: FakeClient) -> None:
    with pytest.raises(NotFound):
        fake.update(CONFIGMAPS, cm("ghost"))


def test_noop_update_keeps_resource_version(fake: FakeClient) -> None:
    first = fake.create(CONFIGMAPS, cm("a", x="1"))
    assert fake.update(CONFIGMAPS, first)["metadata"]["resourceVersion"] == "1"
    assert fake.resource_version == "1"


def test_update_ignores_status_and_bumps_generation_on_spec(fake: FakeClient) -> None:
    created = fake.create(JOBS, {**job("j"), "status": {"active": 9}})
    assert "status" not in created
    changed = fake.update(JOBS, {**created, "spec": {"parallelism": 2}, "status": {"active": 1}})
    assert changed["metadata"]["generation"] == 2 and "status" not in changed
    labelled = fake.update(JOBS, {**changed, "metadata": {**changed["metadata"],
                                                          "labels": {"a": "b"}}})
    assert labelled["metadata"]["generation"] == 2


def test_update_status_changes_only_status(fake: FakeClient) -> None:
    created = fake.create(JOBS, job("j"))
    body = {**created, "spec": {"parallelism": 5}, "status": {"succeeded": 1},
            "metadata": {**created["metadata"], "labels": {"x": "y"}}}
    updated = fake.update_status(JOBS, body)
    assert updated["status"] == {"succeeded": 1}
    assert updated["spec"] == {"parallelism": 1} and updated["metadata"]["labels"] == {}
    assert updated["metadata"]["generation"] == 1
    with pytest.raises(Conflict):
        fake.update_status(JOBS, body)


def test_update_status_without_subresource_is_not_found(fake: FakeClient) -> None:
    created = fake.create(CONFIGMAPS, cm("a"))
    with pytest.raises(NotFound):
        fake.update_status(CONFIGMAPS, created)
    fake.set_status_subresource(CRONJOBS, enabled=False)
    crd = fake.create(CRONJOBS, {"metadata": {"name": "c", "namespace": "d"},
                                 "status": {"x": 1}})
    assert crd["status"] == {"x": 1}


def test_add_object_seeds_status_without_recording(fake: FakeClient) -> None:
    seeded = fake.add_object(JOBS, {**job("j"), "status": {"succeeded": 1}})
    assert seeded["status"] == {"succeeded": 1}
    assert fake.actions == []
    assert fake.list_objects(JOBS, "default") == [seeded]


# -- patch -------------------------------------------------------------------------------
def test_merge_patch_and_null_deletes(fake: FakeClient) -> None:
    fake.create(CONFIGMAPS, cm("a", x="1", y="2"))
    out = fake.patch(CONFIGMAPS, "a", {"data": {"x": None, "z": "3"}}, "default")
    assert out["data"] == {"y": "2", "z": "3"} and out["metadata"]["resourceVersion"] == "2"


def test_json_patch_and_failed_test_op(fake: FakeClient) -> None:
    fake.create(CONFIGMAPS, cm("a", x="1"))
    out = fake.patch(CONFIGMAPS, "a", [{"op": "replace", "path": "/data/x", "value": "2"},
                                       {"op": "add", "path": "/data/y", "value": "3"}],
                     "default", patch_type="json")
    assert out["data"] == {"x": "2", "y": "3"}
    with pytest.raises(Invalid):
        fake.patch(CONFIGMAPS, "a", [{"op": "test", "path": "/data/x", "value": "nope"}],
                   "default", patch_type="json")
    with pytest.raises(BadRequest):
        fake.patch(CONFIGMAPS, "a", {"data": {}}, "default", patch_type="json")


def test_patch_resource_version_is_a_precondition(fake: FakeClient) -> None:
    fake.create(CONFIGMAPS, cm("a"))
    with pytest.raises(Conflict):
        fake.patch(CONFIGMAPS, "a", {"metadata": {"resourceVersion": "99"}}, "default")


def test_status_patch_touches_only_status(fake: FakeClient) -> None:
    fake.create(JOBS, job("j"))
    out = fake.patch(JOBS, "j", {"spec": {"parallelism": 3}, "status": {"active": 1}},
                     "default", subresource="status")
    assert out["status"] == {"active": 1} and out["spec"] == {"parallelism": 1}
    main = fake.patch(JOBS, "j", {"status": {"active": 7}}, "default")
    assert main["status"] == {"active": 1}


def test_apply_creates_then_merges(fake: FakeClient) -> None:
    made = fake.patch(CONFIGMAPS, "a", {"data": {"x": "1"}}, "default", patch_type="apply",
                      field_manager="me")
    assert made["metadata"]["name"] == "a" and made["data"] == {"x": "1"}
    again = fake.patch(CONFIGMAPS, "a", {"data": {"y": "2"}}, "default", patch_type="apply",
                       field_manager="me")
    assert again["data"] == {"x": "1", "y": "2"}


# -- delete ------------------------------------------------------------------------------
def test_delete_with_preconditions(fake: FakeClient) -> None:
    created = fake.create(CONFIGMAPS, cm("a"))
    with pytest.raises(Conflict) as err:
        fake.delete(CONFIGMAPS, "a", "default", preconditions={"uid": "other"})
    assert "UID in the precondition (other)" in err.value.message
    with pytest.raises(Conflict):
        fake.delete(CONFIGMAPS, "a", "default", preconditions={"resourceVersion": "42"})
    gone = fake.delete(CONFIGMAPS, "a", "default",
                       preconditions={"uid": created["metadata"]["uid"]})
    assert gone is not None and gone["metadata"]["resourceVersion"] == "2"
    with pytest.raises(NotFound):
        fake.delete(CONFIGMAPS, "a", "default")


def test_delete_with_finalizers_waits_for_them(fake: FakeClient) -> None:
    created = fake.create(CONFIGMAPS, {**cm("a"), "metadata": {
        "name": "a", "namespace": "default", "finalizers": ["example.com/hold"]}})
    marked = fake.delete(CONFIGMAPS, "a", "default")
    assert marked is not None and marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["uid"] == created["metadata"]["uid"]
    fake.patch(CONFIGMAPS, "a", {"metadata": {"finalizers": None}}, "default")
    with pytest.raises(NotFound):
        fake.get(CONFIGMAPS, "a", "default")


# -- list ---------------------------------------------------------------------------------
def test_list_label_selectors(fake: FakeClient) -> None:
    fake.create(JOBS, job("a", app="web", tier="fe"))
    fake.create(JOBS, job("b", app="db"))
    fake.create(JOBS, job("c", "other", app="web"))

    def names(selector: str, ns: str | None = None) -> list[str]:
        return [i["metadata"]["name"]
                for i in fake.list(JOBS, ns, label_selector=selector)["items"]]

    assert names("app=web") == ["a", "c"]
    assert names("app=web", "default") == ["a"]
    assert names("app!=web") == ["b"]
    assert names("app in (db, web),tier") == ["a"]
    assert names("app notin (web)") == ["b"]
    assert names("!tier") == ["b", "c"]
    with pytest.raises(BadRequest):
        fake.list(JOBS, label_selector="app in web")


def test_list_field_selector(fake: FakeClient) -> None:
    fake.create(CONFIGMAPS, cm("a"))
    fake.create(CONFIGMAPS, cm("b"))
    items = fake.list(CONFIGMAPS, field_selector="metadata.name=b")["items"]
    assert [i["metadata"]["name"] for i in items] == ["b"]


def test_list_pages_with_limit_and_continue(fake: FakeClient) -> None:
    for i in range(7):
        fake.create(CONFIGMAPS, cm(f"cm-{i}"))
    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        page = fake.list(CONFIGMAPS, "default", limit=3, continue_=token)
        pages += 1
        assert page["metadata"]["resourceVersion"] == "7"
        seen += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
        fake.create(CONFIGMAPS, cm(f"late-{pages}"))
    assert pages == 3 and seen[:7] == [f"cm-{i}" for i in range(7)]
    assert page["kind"] == "ConfigMapList"


def test_list_continue_after_compaction_is_gone(fake: FakeClient) -> None:
    for i in range(3):
        fake.create(CONFIGMAPS, cm(f"cm-{i}"))
    token = fake.list(CONFIGMAPS, limit=1)["metadata"]["continue"]
    fake.create(CONFIGMAPS, cm("more"))
    fake.compact()
    with pytest.raises(Gone):
        fake.list(CONFIGMAPS, limit=1, continue_=token)
    with pytest.raises(BadRequest):
        fake.list(CONFIGMAPS, limit=1, continue_="garbage")


# -- watch --------------------------------------------------------------------------------
def test_watch_delivers_subsequent_events(fake: FakeClient) -> None:
    start = fake.create(CONFIGMAPS, cm("a", x="1"))
    reader = Reader(fake.watch(CONFIGMAPS, "default",
                               resource_version=start["metadata"]["resourceVersion"]))
    try:
        updated = fake.update(CONFIGMAPS, {**start, "data": {"x": "2"}})
        fake.create(CONFIGMAPS, cm("other", ns="elsewhere"))
        fake.delete(CONFIGMAPS, "a", "default")
        events = reader.wait_for(2)
        fake.send_bookmarks()
        events = reader.wait_for(3)
    finally:
        reader.stop()
    assert types(events) == ["MODIFIED", "DELETED", "BOOKMARK"]
    assert events[0]["object"] == updated
    assert events[2]["object"]["metadata"]["resourceVersion"] == fake.resource_version
    assert fake.watch_count() == 0


def test_watch_replays_history_and_synthesises_adds(fake: FakeClient) -> None:
    a = fake.create(CONFIGMAPS, cm("a"))
    fake.create(CONFIGMAPS, cm("b"))
    fake.delete(CONFIGMAPS, "b", "default")
    replay = Reader(fake.watch(CONFIGMAPS, resource_version=a["metadata"]["resourceVersion"]))
    fresh = Reader(fake.watch(CONFIGMAPS, resource_version="0"))
    try:
        assert types(replay.wait_for(2)) == ["ADDED", "DELETED"]
        assert [e["object"]["metadata"]["name"] for e in fresh.wait_for(1)] == ["a"]
    finally:
        replay.stop()
        fresh.stop()


def test_watch_from_compacted_version_gets_410_error_event(fake: FakeClient) -> None:
    a = fake.create(CONFIGMAPS, cm("a"))
    fake.create(CONFIGMAPS, cm("b"))
    fake.compact()
    events = list(fake.watch(CONFIGMAPS, resource_version=a["metadata"]["resourceVersion"]))
    assert types(events) == ["ERROR"]
    assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"


def test_watch_label_selector_transitions(fake: FakeClient) -> None:
    created = fake.create(JOBS, job("j", app="web"))
    reader = Reader(fake.watch(JOBS, "default", label_selector="app=web",
                               resource_version=created["metadata"]["resourceVersion"]))
    try:
        moved = fake.patch(JOBS, "j", {"metadata": {"labels": {"app": "db"}}}, "default")
        fake.patch(JOBS, "j", {"metadata": {"labels": {"app": "web"}}}, "default")
        events = reader.wait_for(2)
    finally:
        reader.stop()
    assert types(events) == ["DELETED", "ADDED"]
    assert events[0]["object"] == moved


def test_watch_times_out_on_the_clock(fake: FakeClient, clock: FakeClock) -> None:
    reader = Reader(fake.watch(CONFIGMAPS, timeout_seconds=60))
    try:
        assert clock.wait_for_waiters(1)
        clock.step(30)
        fake.create(CONFIGMAPS, cm("a"))
        reader.wait_for(1)
        clock.step(31)
        reader.wait_done()
    finally:
        reader.stop()
    assert types(reader.events) == ["ADDED"]


def test_end_watches_ends_streams(fake: FakeClient) -> None:
    reader = Reader(fake.watch(CONFIGMAPS))
    try:
        fake.end_watches()
        reader.wait_done()
    finally:
        reader.stop()
    assert fake.watch_count() == 0


# -- reactors and actions -----------------------------------------------------------------
def test_reactor_injects_errors_and_falls_through(fake: FakeClient) -> None:
    calls: list[Action] = []

    def fail_first_create(action: Action) -> Any:
        calls.append(action)
        if len(calls) == 1:
            raise Conflict("injected", 409, "Conflict")
        return None

    fake.prepend_reactor("create", "configmaps", fail_first_create)
    with pytest.raises(Conflict, match="injected"):
        fake.create(CONFIGMAPS, cm("a"))
    assert fake.create(CONFIGMAPS, cm("a"))["metadata"]["name"] == "a"
    fake.create(JOBS, job("j"))  # other resource: reactor not consulted
    assert len(calls) == 2


def test_reactor_result_short_circuits_and_status_subresource_match(fake: FakeClient) -> None:
    fake.create(JOBS, job("j"))
    fake.prepend_reactor("update", "jobs/status", lambda a: {"intercepted": True})
    assert fake.update_status(JOBS, fake.get(JOBS, "j", "default")) == {"intercepted": True}
    assert fake.update(JOBS, fake.get(JOBS, "j", "default"))["metadata"]["name"] == "j"


def test_actions_record_every_call(fake: FakeClient) -> None:
    created = fake.create(CONFIGMAPS, cm("a", x="1"))
    fake.get(CONFIGMAPS, "a", "default")
    fake.list(CONFIGMAPS, "default", label_selector="x=y")
    fake.patch(CONFIGMAPS, "a", {"data": {"x": "2"}}, "default")
    fake.delete(CONFIGMAPS, "a", "default", propagation_policy="Background")
    with pytest.raises(NotFound):
        fake.get(CONFIGMAPS, "a", "default")
    acts = fake.actions
    assert [(a.verb, a.namespace, a.name) for a in acts] == [
        ("create", "default", "a"), ("get", "default", "a"), ("list", "default", None),
        ("patch", "default", "a"), ("delete", "default", "a"), ("get", "default", "a")]
    assert acts[0].object == cm("a", x="1") and acts[0].object != created
    assert acts[2].options["label_selector"] == "x=y"
    assert acts[4].options["propagation_policy"] == "Background"
    assert acts[0].matches("create", CONFIGMAPS) and not acts[0].matches("create", JOBS)
    fake.clear_actions()
    assert fake.actions == []


def test_concurrent_updates_one_wins_per_version(fake: FakeClient) -> None:
    base = fake.create(CONFIGMAPS, cm("a", n="0"))
    results: list[str] = []
    lock = threading.Lock()

    def writer(i: int) -> None:
        try:
            fake.update(CONFIGMAPS, {**base, "data": {"n": str(i + 1)}})
            outcome = "ok"
        except Conflict:
            outcome = "conflict"
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=writer, args=(i,), name=f"w{i}") for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5.0)
    assert sorted(results) == ["conflict"] * 7 + ["ok"]


def test_fake_client_satisfies_the_client_protocol() -> None:
    from pyctrl.kube.interface import Client

    c: Client = FakeClient()  # mypy checks the protocol
    assert c.list(CONFIGMAPS)["items"] == []


def test_a_uid_in_a_patch_is_a_precondition_as_on_the_server(fake: FakeClient) -> None:
    stored = fake.create(CONFIGMAPS, cm("a", x="1"))
    uid = stored["metadata"]["uid"]
    other = "00000000-0000-0000-0000-000000000000"
    with pytest.raises(Invalid, match="field is immutable") as err:
        fake.patch(CONFIGMAPS, "a", {"metadata": {"uid": other}}, "default",
                   patch_type="merge")
    assert [c.field for c in err.value.causes] == ["metadata.uid"]
    applied = fake.patch(CONFIGMAPS, "a", {"metadata": {"name": "a", "uid": uid},
                                           "data": {"x": "2"}}, "default",
                         patch_type="apply", field_manager="m")
    assert applied["metadata"]["uid"] == uid and applied["data"]["x"] == "2"
    with pytest.raises(Conflict, match="uid mismatch"):
        fake.patch(CONFIGMAPS, "gone", {"metadata": {"name": "gone", "uid": uid}}, "default",
                   patch_type="apply", field_manager="m")
    with pytest.raises(NotFound):
        fake.get(CONFIGMAPS, "gone", "default")
