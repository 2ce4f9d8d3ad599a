"""SharedIndexInformer against a real kube-apiserver: paged sync, events, 410, restarts."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any

import pytest

from pyctrl.cache.informer import SharedIndexInformer
from pyctrl.cache.listwatch import ListWatch
from pyctrl.cache.processor import ResourceEventHandlerFuncs
from pyctrl.kube.client import RESTClient
from pyctrl.kube.interface import RawObject, WatchStream
from pyctrl.kube.resource import CONFIGMAPS
from pyctrl.testing.envtest import ControlPlane
from tests import threads
from tests.waiting import poll

pytestmark = pytest.mark.integration

SYNC_TIMEOUT = 60.0


class CountingListWatch(ListWatch):
    """A ListWatch that counts LIST calls (to see relists) and their page limits."""

    lists: list[tuple[int | None, str | None, str | None]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        object.__setattr__(self, "lists", [])

    def list(self, *, limit: int | None, continue_: str | None,
             resource_version: str | None) -> RawObject:
        self.lists.append((limit, continue_, resource_version))
        return super().list(limit=limit, continue_=continue_, resource_version=resource_version)

    def watch(self, *, resource_version: str, timeout_seconds: int,
              allow_watch_bookmarks: bool) -> WatchStream:
        return super().watch(resource_version=resource_version, timeout_seconds=timeout_seconds,
                             allow_watch_bookmarks=allow_watch_bookmarks)


def create_configmaps(client: RESTClient, namespace: str, n: int, prefix: str = "cm") -> None:
    def one(i: int) -> None:
        client.create(CONFIGMAPS, {"metadata": {"name": f"{prefix}-{i}", "labels": {"i": str(i)}},
                                   "data": {"v": "0"}}, namespace)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(n)))


def wait_until(pred: Callable[[], bool], timeout: float = SYNC_TIMEOUT) -> bool:
    return bool(poll(pred, timeout, interval=0.1)) or pred()


def fresh_state(client: RESTClient, namespace: str) -> dict[str, str]:
    items = client.list(CONFIGMAPS, namespace)["items"]
    return {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in items}


def cache_state(informer: SharedIndexInformer) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"]
            for o in informer.get_indexer().list()}


def running(informer: SharedIndexInformer) -> AbstractContextManager[threading.Event]:
    return threads.running(informer.run, name="it-informer", join_timeout=60)


def new_informer(client: RESTClient, namespace: str,
                 page_size: int = 500) -> tuple[SharedIndexInformer, CountingListWatch]:
    lw = CountingListWatch(client, CONFIGMAPS, namespace)
    return SharedIndexInformer(lw, name="it", page_size=page_size), lw


def test_syncs_over_1000_configmaps_with_small_pages_and_sees_changes(
        client: RESTClient, namespace: str) -> None:
    create_configmaps(client, namespace, 1100)
    informer, _ = new_informer(client, namespace, page_size=100)
    events: list[tuple[str, str]] = []
    informer.add_event_handler(ResourceEventHandlerFuncs(
        add_func=lambda o: events.append(("add", o["metadata"]["name"])),
        update_func=lambda a, b: events.append(("update", b["metadata"]["name"])),
        delete_func=lambda o: events.append(("delete", str(o["metadata"]["name"]
                                                           if isinstance(o, dict) else o.key))),
    ))
    with running(informer) as stop:
        assert informer.wait_for_sync(stop, SYNC_TIMEOUT)
        assert len(informer.get_indexer().list()) == 1100
        assert all("managedFields" not in o["metadata"] for o in informer.get_indexer().list())
        client.patch(CONFIGMAPS, "cm-1", {"data": {"v": "1"}}, namespace)
        client.delete(CONFIGMAPS, "cm-2", namespace)
        assert wait_until(lambda: ("delete", "cm-2") in events and ("update", "cm-1") in events)
        assert informer.lister().get(namespace, "cm-1")["data"] == {"v": "1"}
        assert wait_until(lambda: cache_state(informer) == fresh_state(client, namespace))


def test_recovers_from_compaction_410_with_cache_equal_to_fresh_list(
        client: RESTClient, namespace: str, control_plane: ControlPlane) -> None:
    create_configmaps(client, namespace, 50)
    informer, lw = new_informer(client, namespace)
    with running(informer) as stop:
        assert informer.wait_for_sync(stop, SYNC_TIMEOUT)
        old_rv = informer.last_sync_resource_version()
        # Changes made now are in etcd history; compacting past them and restarting the
        # apiserver (fresh watch cache) makes a watch from old_rv answer 410 Gone.
        client.delete(CONFIGMAPS, "cm-0", namespace)
        client.patch(CONFIGMAPS, "cm-1", {"data": {"v": "x"}}, namespace)
        control_plane.stop_apiserver()
        control_plane.compact_etcd()
        control_plane.start_apiserver()
        client.delete(CONFIGMAPS, "cm-3", namespace)
        create_configmaps(client, namespace, 3, prefix="after")
        assert wait_until(lambda: cache_state(informer) == fresh_state(client, namespace))
        assert informer.last_sync_resource_version() != old_rv
    lists = [c for c in lw.lists if c[1] is None]  # first pages only
    assert len(lists) >= 2, f"expected a relist after 410, LIST calls: {lw.lists}"


def test_survives_apiserver_restart_mid_watch(
        client: RESTClient, namespace: str, control_plane: ControlPlane) -> None:
    create_configmaps(client, namespace, 20)
    informer, _ = new_informer(client, namespace)
    with running(informer) as stop:
        assert informer.wait_for_sync(stop, SYNC_TIMEOUT)
        control_plane.restart_apiserver()
        client.patch(CONFIGMAPS, "cm-5", {"data": {"v": "after-restart"}}, namespace)
        client.delete(CONFIGMAPS, "cm-6", namespace)
        assert wait_until(lambda: cache_state(informer) == fresh_state(client, namespace))
        assert informer.lister().get(namespace, "cm-5")["data"] == {"v": "after-restart"}


def test_late_handler_sees_every_existing_object(client: RESTClient, namespace: str) -> None:
    create_configmaps(client, namespace, 200)
    informer, _ = new_informer(client, namespace, page_size=50)
    with running(informer) as stop:
        assert informer.wait_for_sync(stop, SYNC_TIMEOUT)
        seen: set[str] = set()
        reg = informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=lambda o: seen.add(o["metadata"]["name"])))
        assert wait_until(reg.has_synced)
        assert seen == {f"cm-{i}" for i in range(200)}
