"""Metadata-only informers against a real kube-apiserver: PartialObjectMetadata lists (paged)
and watches, cached as spec-less objects typed as the resource."""

from __future__ import annotations

import threading

import pytest

from pyctrl.cache import SharedInformerFactory
from pyctrl.kube.client import RESTClient
from pyctrl.kube.resource import CONFIGMAPS
from tests.integration.test_informer import create_configmaps, wait_until

pytestmark = pytest.mark.integration


def test_the_server_answers_metadata_only_lists_and_watches(
    client: RESTClient, namespace: str
) -> None:
    create_configmaps(client, namespace, 3)
    page = client.list(CONFIGMAPS, namespace, metadata_only=True, limit=2)
    assert (page["apiVersion"], page["kind"]) == ("meta.k8s.io/v1", "PartialObjectMetadataList")
    assert page["metadata"].get("continue")
    assert [set(i) for i in page["items"]] == [{"apiVersion", "kind", "metadata"}] * 2
    assert {i["kind"] for i in page["items"]} == {"PartialObjectMetadata"}
    stream = client.watch(CONFIGMAPS, namespace, metadata_only=True, send_initial_events=True,
                          timeout_seconds=10)
    try:
        for event in stream:
            if event["type"] == "BOOKMARK":
                break
            assert event["object"]["kind"] == "PartialObjectMetadata"
            assert "data" not in event["object"]
    finally:
        stream.close()


def test_metadata_informer_syncs_pages_and_follows_changes(
    client: RESTClient, namespace: str
) -> None:
    create_configmaps(client, namespace, 25)
    factory = SharedInformerFactory(client, namespace=namespace, page_size=7)
    lister = factory.lister_for(CONFIGMAPS, metadata_only=True, label_selector="i")
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(stop, timeout=60)
        cached = lister.list()
        assert len(cached) == 25
        assert {(o["apiVersion"], o["kind"]) for o in cached} == {("v1", "ConfigMap")}
        assert all(set(o) == {"apiVersion", "kind", "metadata"} for o in cached)
        assert all("managedFields" not in o["metadata"] for o in cached)  # factory transform
        fresh = {i["metadata"]["name"]: i["metadata"]["resourceVersion"]
                 for i in client.list(CONFIGMAPS, namespace)["items"]}
        assert {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in cached
                } == fresh

        obj = client.get(CONFIGMAPS, "cm-3", namespace)
        obj["metadata"]["labels"]["extra"] = "yes"
        client.update(CONFIGMAPS, obj, namespace)
        client.delete(CONFIGMAPS, "cm-4", namespace)
        assert wait_until(lambda: lister.get(namespace, "cm-3")["metadata"]["labels"].get(
            "extra") == "yes" and len(lister.list()) == 24)
        assert lister.get(namespace, "cm-3")["kind"] == "ConfigMap"
    finally:
        stop.set()
        factory.shutdown()
