"""RESTClient against a real kube-apiserver: CRUD, paging, watch, apply, errors."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pyctrl.errors import AlreadyExists, Conflict, Gone, Invalid, NotFound
from pyctrl.kube.client import RESTClient
from pyctrl.kube.interface import WatchEvent
from pyctrl.kube.resource import CONFIGMAPS, JOBS

pytestmark = pytest.mark.integration


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": dict(data)}


def test_configmap_crud(client: RESTClient, namespace: str) -> None:
    created = client.create(CONFIGMAPS, cm("a", x="1"), namespace)
    assert created["metadata"]["uid"] and created["metadata"]["namespace"] == namespace
    got = client.get(CONFIGMAPS, "a", namespace)
    assert got["data"] == {"x": "1"}
    got["data"]["x"] = "2"
    updated = client.update(CONFIGMAPS, got)
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    patched = client.patch(CONFIGMAPS, "a", {"data": {"y": "3"}}, namespace)
    assert patched["data"] == {"x": "2", "y": "3"}
    jp = client.patch(CONFIGMAPS, "a", [{"op": "remove", "path": "/data/x"}], namespace,
                      patch_type="json")
    assert jp["data"] == {"y": "3"}
    listed = client.list(CONFIGMAPS, namespace, field_selector="metadata.name=a")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a"]
    client.delete(CONFIGMAPS, "a", namespace)
    with pytest.raises(NotFound) as err:
        client.get(CONFIGMAPS, "a", namespace)
    assert err.value.details.get("name") == "a"


def test_update_with_stale_resource_version_conflicts(client: RESTClient,
                                                      namespace: str) -> None:
    first = client.create(CONFIGMAPS, cm("a", x="1"), namespace)
    client.update(CONFIGMAPS, {**first, "data": {"x": "2"}})
    with pytest.raises(Conflict) as err:
        client.update(CONFIGMAPS, {**first, "data": {"x": "3"}})
    assert err.value.code == 409 and not isinstance(err.value, AlreadyExists)


def test_create_existing_is_already_exists(client: RESTClient, namespace: str) -> None:
    client.create(CONFIGMAPS, cm("a"), namespace)
    with pytest.raises(AlreadyExists) as err:
        client.create(CONFIGMAPS, cm("a"), namespace)
    assert err.value.code == 409 and err.value.reason == "AlreadyExists"


def test_invalid_object_maps_causes(client: RESTClient, namespace: str) -> None:
    with pytest.raises(Invalid) as err:
        client.create(CONFIGMAPS, cm("Not_A_Valid_Name"), namespace)
    assert err.value.code == 422
    assert "metadata.name" in [c.field for c in err.value.causes]


def test_delete_with_preconditions(client: RESTClient, namespace: str) -> None:
    created = client.create(CONFIGMAPS, cm("a"), namespace)
    with pytest.raises(Conflict) as err:
        client.delete(CONFIGMAPS, "a", namespace, preconditions={"uid": "not-the-uid"})
    assert "UID in the precondition" in err.value.message
    with pytest.raises(Conflict):
        client.delete(CONFIGMAPS, "a", namespace, preconditions={"resourceVersion": "1"})
    client.delete(CONFIGMAPS, "a", namespace, propagation_policy="Background",
                  preconditions={"uid": created["metadata"]["uid"],
                                 "resourceVersion": created["metadata"]["resourceVersion"]})
    with pytest.raises(NotFound):
        client.get(CONFIGMAPS, "a", namespace)


def test_paged_list_returns_every_object(client: RESTClient, namespace: str) -> None:
    for i in range(25):
        client.create(CONFIGMAPS, cm(f"cm-{i:02d}"), namespace)
    names: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        page = client.list(CONFIGMAPS, namespace, limit=10, continue_=token)
        pages += 1
        names += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
    assert pages == 3 and names == [f"cm-{i:02d}" for i in range(25)]


def test_server_side_apply_with_field_manager(client: RESTClient, namespace: str) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "applied", "namespace": namespace}, "data": {"a": "1"}}
    made = client.patch(CONFIGMAPS, "applied", body, namespace, patch_type="apply",
                        field_manager="pyctrl-test")
    managers = [m["manager"] for m in made["metadata"]["managedFields"]]
    assert managers == ["pyctrl-test"]
    with pytest.raises(Conflict):
        client.patch(CONFIGMAPS, "applied", {**body, "data": {"a": "2"}}, namespace,
                     patch_type="apply", field_manager="other")
    forced = client.patch(CONFIGMAPS, "applied", {**body, "data": {"a": "2"}}, namespace,
                          patch_type="apply", field_manager="other", force=True)
    assert forced["data"] == {"a": "2"}


def test_status_subresource(client: RESTClient, namespace: str) -> None:
    job = {"metadata": {"name": "j"}, "spec": {"suspend": True, "template": {"spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox"}]}}}}
    created = client.create(JOBS, job, namespace)
    status = {**created, "status": {"active": 0, "failed": 0, "succeeded": 0,
                                    "startTime": "2026-01-01T00:00:00Z"}}
    updated = client.update_status(JOBS, status)
    assert updated["status"]["startTime"] == "2026-01-01T00:00:00Z"
    assert updated["metadata"]["generation"] == created["metadata"]["generation"]


class Collector:
    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.events: list[WatchEvent] = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, name="it-watch")
        self.thread.start()

    def _run(self) -> None:
        for event in self.stream:
            with self.cond:
                self.events.append(event)
                self.cond.notify_all()

    def wait_for(self, pred: Any, timeout: float = 30.0) -> list[WatchEvent]:
        with self.cond:
            assert self.cond.wait_for(lambda: pred(self.events), timeout), self.events
            return list(self.events)

    def stop(self) -> None:
        self.stream.close()
        self.thread.join(10)
        assert not self.thread.is_alive()


def test_watch_receives_changes_and_bookmarks(client: RESTClient, namespace: str) -> None:
    rv = client.list(CONFIGMAPS, namespace)["metadata"]["resourceVersion"]
    watcher = Collector(client.watch(CONFIGMAPS, namespace, resource_version=rv,
                                     timeout_seconds=120))
    try:
        created = client.create(CONFIGMAPS, cm("w", x="1"), namespace)
        client.update(CONFIGMAPS, {**created, "data": {"x": "2"}})
        client.delete(CONFIGMAPS, "w", namespace)
        events = watcher.wait_for(lambda evs: len([e for e in evs
                                                   if e["type"] != "BOOKMARK"]) >= 3)
        changes = [(e["type"], e["object"]["metadata"]["name"]) for e in events
                   if e["type"] != "BOOKMARK"]
        assert changes == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]
    finally:
        watcher.stop()


def test_watch_initial_events_end_with_bookmark(client: RESTClient, namespace: str) -> None:
    client.create(CONFIGMAPS, cm("b"), namespace)
    watcher = Collector(client.watch(CONFIGMAPS, namespace, send_initial_events=True,
                                     resource_version="", timeout_seconds=60))
    try:
        events = watcher.wait_for(lambda evs: any(e["type"] == "BOOKMARK" for e in evs))
    finally:
        watcher.stop()
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    bookmark = events[1]["object"]["metadata"]
    assert bookmark["annotations"]["k8s.io/initial-events-end"] == "true"
    assert int(bookmark["resourceVersion"]) >= int(events[0]["object"]["metadata"][
        "resourceVersion"])


def test_watch_from_compacted_version_reports_gone(client: RESTClient, namespace: str,
                                                   control_plane: Any) -> None:
    # The watch cache would still serve an old version; after compaction and an apiserver
    # restart it starts at the current revision, so the old one is "too old": 410 Expired.
    rv = client.create(CONFIGMAPS, cm("x"), namespace)["metadata"]["resourceVersion"]
    client.create(CONFIGMAPS, cm("y"), namespace)
    control_plane.compact_etcd()
    try:
        control_plane.restart_apiserver()
    except Exception as exc:  # an existing cluster (kind) is not ours to restart
        pytest.skip(f"cannot restart the apiserver: {exc}")
    try:
        events = list(client.watch(CONFIGMAPS, namespace, resource_version=rv,
                                   timeout_seconds=5))
    except Gone:
        return
    assert [e["type"] for e in events] == ["ERROR"]
    assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"
