"""The Client options: one list/watch/patch/delete signature for every Client, and what each
becomes on the wire."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import fields
from typing import Any

import pytest

from pyctrl.kube.client import RESTClient
from pyctrl.kube.config import KubeConfig
from pyctrl.kube.fenced import FencedClient
from pyctrl.kube.interface import Client, RawLister
from pyctrl.kube.options import INITIAL_EVENTS_END_ANNOTATION, ListArgs, ListOptions, WatchArgs
from pyctrl.kube.resource import CONFIGMAPS, JOBS
from pyctrl.kube.write_options import DeleteArgs, DeleteOptions, PatchArgs, PatchOptions
from pyctrl.testing.fake_client import FakeClient
from tests.unit.kube.http_stub import Reply, StubServer


class _Leader:
    def holds_lease(self) -> bool:
        return True

    def describe(self) -> str:
        return "Lease test/test"


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer()
    yield server
    server.stop()


@pytest.fixture
def rest(stub: StubServer) -> Iterator[RESTClient]:
    c = RESTClient(KubeConfig.from_url(stub.url), qps=0, timeout=5.0)
    yield c
    c.close()


def test_the_keyword_sets_are_the_fields_of_list_options() -> None:
    names = {f.name for f in fields(ListOptions)}
    assert set(ListArgs.__annotations__) <= names
    assert set(WatchArgs.__annotations__) <= names
    assert set(ListArgs.__annotations__) | set(WatchArgs.__annotations__) == names


@pytest.mark.parametrize(("args", "options"), [(PatchArgs, PatchOptions),
                                               (DeleteArgs, DeleteOptions)])
def test_the_write_keywords_are_the_fields_of_their_options(args: type, options: type) -> None:
    assert set(args.__annotations__) == {f.name for f in fields(options)}


@pytest.mark.parametrize("method", ["list", "watch", "create", "update", "update_status",
                                    "patch", "delete"])
def test_every_client_has_the_one_signature(method: str) -> None:
    want = inspect.signature(getattr(Client, method)).parameters
    for impl in (RESTClient, FencedClient, FakeClient):
        got = inspect.signature(getattr(impl, method)).parameters
        assert [(p.name, p.kind, p.default) for p in got.values()] == [
            (p.name, p.kind, p.default) for p in want.values()], impl
        if "kwargs" in want:
            assert got["kwargs"].annotation == want["kwargs"].annotation, impl


def test_patch_options_are_validated_once_for_every_client() -> None:
    assert PatchOptions.of({}) == PatchOptions(patch_type="merge")
    assert PatchOptions.of({"patch_type": "apply", "field_manager": "m", "force": True}
                           ).query() == {"fieldManager": "m", "force": "true"}
    assert PatchOptions(patch_type="json").content_type == "application/json-patch+json"
    for bad in ({"patch_type": "bogus"}, {"patch_type": "apply"}, {"force": True}):
        with pytest.raises(ValueError):
            PatchOptions.of(bad)
    fake = FakeClient()
    fake.create(CONFIGMAPS, {"metadata": {"name": "a"}}, "ns")
    with pytest.raises(ValueError):
        fake.patch(CONFIGMAPS, "a", {"data": {}}, "ns", patch_type="apply")
    with pytest.raises(TypeError):
        fake.patch(CONFIGMAPS, "a", {"data": {}}, "ns", **{"fieldmanager": "m"})  # type: ignore[arg-type]
    assert [a.verb for a in fake.actions] == ["create"]  # refused before it is recorded


def test_delete_options_body() -> None:
    assert DeleteOptions.of(None).body() == {"apiVersion": "v1", "kind": "DeleteOptions"}
    assert DeleteOptions(propagation_policy="Orphan", preconditions={"uid": "u"}).body() == {
        "apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Orphan",
        "preconditions": {"uid": "u"}}


def test_fenced_client_passes_write_keywords_through() -> None:
    fake = FakeClient()
    client = FencedClient(fake, _Leader())
    made = fake.create(JOBS, {"metadata": {"name": "j"}}, "ns")
    client.patch(JOBS, "j", {"status": {"active": 1}}, "ns", subresource="status")
    client.delete(JOBS, "j", "ns", propagation_policy="Background",
                  preconditions={"uid": made["metadata"]["uid"]})
    patch, delete = fake.actions[-2:]
    assert (patch.verb, patch.subresource, patch.options["patch_type"]) == (
        "patch", "status", "merge")
    assert delete.options == {"propagation_policy": "Background",
                              "preconditions": {"uid": made["metadata"]["uid"]}}


def test_list_query_leaves_out_unset_and_watch_only_fields() -> None:
    assert ListOptions().list_query() == {}
    opts = ListOptions(label_selector="a=b", limit=0, timeout_seconds=5,
                       resource_version="0", resource_version_match="NotOlderThan")
    assert opts.list_query() == {"labelSelector": "a=b", "resourceVersion": "0",
                                 "resourceVersionMatch": "NotOlderThan"}


def test_watch_query() -> None:
    assert ListOptions().watch_query() == {"watch": "true", "allowWatchBookmarks": "true"}
    assert ListOptions(allow_watch_bookmarks=False, limit=5, continue_="c",
                       resource_version_match="Exact").watch_query() == {"watch": "true"}
    assert ListOptions(allow_watch_bookmarks=False, send_initial_events=True,
                       field_selector="metadata.name=x").watch_query() == {
        "watch": "true", "allowWatchBookmarks": "true", "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan", "fieldSelector": "metadata.name=x"}


def test_keywords_override_options() -> None:
    base = ListOptions(label_selector="a=b", limit=10)
    assert ListOptions.of(base, {"limit": 3}) == ListOptions(label_selector="a=b", limit=3)
    assert ListOptions.of(base, {}) is base
    assert ListOptions.of(None, None) == ListOptions()


def test_rest_client_takes_options_and_keywords(rest: RESTClient, stub: StubServer) -> None:
    stub.respond = lambda req: Reply(body={"items": [], "metadata": {"resourceVersion": "5"}})
    rest.list(CONFIGMAPS, "ns", options=ListOptions(label_selector="a=b", limit=7), limit=2)
    assert stub.requests[0].query == {"labelSelector": "a=b", "limit": "2"}
    assert rest.list_raw(CONFIGMAPS, "ns", options=ListOptions(field_selector="x=y")).startswith(
        b"{")
    assert stub.requests[1].query == {"fieldSelector": "x=y"}


def test_only_the_rest_client_is_a_raw_lister() -> None:
    fake = FakeClient()
    assert isinstance(RESTClient(KubeConfig.from_url("http://127.0.0.1:1"), qps=0), RawLister)
    assert not isinstance(fake, RawLister)
    assert not isinstance(FencedClient(fake, _Leader()), RawLister)


@pytest.mark.parametrize("wrap", [False, True])
def test_fake_and_fenced_clients_take_options_and_initial_events(wrap: bool) -> None:
    fake = FakeClient()
    client: Client = FencedClient(fake, _Leader()) if wrap else fake
    for name, app in [("a", "web"), ("b", "db")]:
        fake.create(CONFIGMAPS, {"metadata": {"name": name, "labels": {"app": app}}}, "ns")
    web = ListOptions(label_selector="app=web")
    assert [o["metadata"]["name"] for o in client.list(CONFIGMAPS, "ns", options=web)["items"]
            ] == ["a"]
    stream = client.watch(CONFIGMAPS, "ns", options=web, resource_version="2",
                          send_initial_events=True, timeout_seconds=0)
    events: list[dict[str, Any]] = list(stream)
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in events] == [
        ("ADDED", "a"), ("BOOKMARK", None)]
    assert events[1]["object"]["metadata"]["annotations"] == {
        INITIAL_EVENTS_END_ANNOTATION: "true"}
    watch = fake.actions[-1]
    assert watch.verb == "watch" and watch.options["send_initial_events"] is True
    assert watch.options["label_selector"] == "app=web"
