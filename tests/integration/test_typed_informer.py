"""Typed informers against a real kube-apiserver: a CRD kind (examples/website's Website) and
generated built-in kinds (pyctrl.models' ConfigMap, Job) decoded straight from the LIST pages
and watch lines into their classes, by paged LIST and by watch-list."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from examples.website.api import WEBSITES, Website
from pyctrl.cache import SharedInformerFactory
from pyctrl.kube.client import RESTClient
from pyctrl.kube.resource import JOBS
from pyctrl.models.batch_v1 import Job
from pyctrl.models.core_v1 import ConfigMap
from tests.integration.test_informer import create_configmaps, wait_until

pytestmark = pytest.mark.integration


def _website(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "example.pyctrl.io/v1", "kind": "Website",
            "metadata": {"name": name, "labels": {"tier": "web" if replicas else "idle"}},
            "spec": {"image": "nginx:1.27", "replicas": replicas}}


def _job(name: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "busybox"}]}}}}


@pytest.mark.parametrize("watch_list", [False, True], ids=["list", "watch-list"])
def test_typed_informers_sync_and_follow_crd_and_builtin_kinds(
        client: RESTClient, namespace: str, watch_list: bool) -> None:
    for i in range(5):
        client.create(WEBSITES, _website(f"site-{i}", i), namespace)
    create_configmaps(client, namespace, 7)
    client.create(JOBS, _job("job-a"), namespace)
    factory = SharedInformerFactory(client, namespace=namespace, page_size=2,
                                    watch_list=watch_list)
    sites = factory.lister_for(Website, indexers={
        "image": lambda site: [site.spec.image]})
    maps = factory.lister_for(ConfigMap, label_selector="i")
    jobs = factory.lister_for(Job)
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(stop, timeout=60)
        cached = sites.list()
        assert sorted(s.metadata.name for s in cached) == [f"site-{i}" for i in range(5)]
        assert all(type(s) is Website for s in cached)
        assert {(s.api_version, s.kind) for s in cached} == {("example.pyctrl.io/v1",
                                                               "Website")}
        site = sites.get(namespace, "site-3")
        assert site.spec.replicas == 3 and site.metadata.uid and site.metadata.generation == 1
        assert site.metadata.resource_version == client.get(
            WEBSITES, "site-3", namespace)["metadata"]["resourceVersion"]
        assert [s.metadata.name for s in sites.list(namespace, "tier=idle")] == ["site-0"]
        assert len(sites.by_index("image", "nginx:1.27")) == 5
        assert len(maps.list()) == 7 and maps.get(namespace, "cm-2").data == {"v": "0"}
        assert type(jobs.get(namespace, "job-a")) is Job

        # Watch: an update, a status write, a create and a delete, all typed.
        client.patch(WEBSITES, "site-3", {"spec": {"replicas": 9}}, namespace,
                     patch_type="merge")
        client.patch(JOBS, "job-a", {"status": {"active": 1}}, namespace,
                     patch_type="merge", subresource="status")
        client.create(WEBSITES, _website("site-new", 1), namespace)
        client.delete(WEBSITES, "site-0", namespace)
        assert wait_until(lambda: sites.get(namespace, "site-3").spec.replicas == 9
                          and jobs.get(namespace, "job-a").status.active == 1
                          and len(sites.list()) == 5
                          and not sites.list(namespace, "tier=idle"))
        updated = sites.get(namespace, "site-3")
        assert type(updated) is Website and updated.metadata.generation == 2
        assert updated is not site and site.spec.replicas == 3  # the old one is untouched
        assert type(sites.get(namespace, "site-new")) is Website
    finally:
        stop.set()
        factory.shutdown()
