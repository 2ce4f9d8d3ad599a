"""Integration tests of the envtest harness against the real binaries it starts."""

from __future__ import annotations

import json
import ssl
import threading
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from pyctrl.testing.envtest import ControlPlane
from pyctrl.testing.envtest.pods import fake_run
from tests.waiting import eventually

pytestmark = pytest.mark.integration

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.envtest.pyctrl.io"},
    "spec": {
        "group": "envtest.pyctrl.io",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object",
                                        "properties": {"size": {"type": "integer"}}}},
            }},
        }],
    },
}


def _owned(cp: ControlPlane) -> None:
    if cp.external:
        pytest.skip("needs a control plane started by envtest")


def test_list_namespaces(control_plane: ControlPlane) -> None:
    out = control_plane.kubectl("get", "namespaces", "-o", "json").stdout
    names = {item["metadata"]["name"] for item in json.loads(out)["items"]}
    assert {"default", "kube-system"} <= names


def test_crd_established_and_custom_resource_watched(control_plane: ControlPlane) -> None:
    _owned(control_plane)
    control_plane.install_crds([WIDGET_CRD])
    http = control_plane.http
    ns = "default"
    base = f"/apis/envtest.pyctrl.io/v1/namespaces/{ns}/widgets"
    status, listing = http.request("GET", base)
    assert status == 200
    rv = listing["metadata"]["resourceVersion"]
    events: list[dict[str, Any]] = []
    got = threading.Event()
    pki = control_plane.pki
    ctx = ssl.create_default_context(cafile=str(pki.ca_cert))
    ctx.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))

    def watch() -> None:
        url = f"{control_plane.server}{base}?watch=1&resourceVersion={rv}&timeoutSeconds=20"
        with urllib.request.urlopen(url, context=ctx, timeout=30) as resp:
            for line in resp:
                events.append(json.loads(line))
                got.set()
                return

    watcher = threading.Thread(target=watch, name="test-watch")
    watcher.start()
    name = f"w-{uuid.uuid4().hex[:6]}"
    status, created = http.request("POST", base, {
        "apiVersion": "envtest.pyctrl.io/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"size": 3},
    })
    assert status == 201, created
    assert got.wait(20)
    watcher.join(20)
    assert events[0]["type"] == "ADDED"
    assert events[0]["object"]["metadata"]["name"] == name
    assert events[0]["object"]["spec"]["size"] == 3


def test_owner_deletion_garbage_collects_owned_object(control_plane: ControlPlane) -> None:
    http = control_plane.http if not control_plane.external else None
    if http is None:
        pytest.skip("uses the admin HTTP client")
    status, owner = http.request("POST", "/api/v1/namespaces/default/configmaps", {
        "metadata": {"name": f"owner-{uuid.uuid4().hex[:6]}"}})
    assert status == 201
    meta = owner["metadata"]
    status, owned = http.request("POST", "/api/v1/namespaces/default/configmaps", {
        "metadata": {"name": f"owned-{uuid.uuid4().hex[:6]}", "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}]}})
    assert status == 201
    status, _ = http.request("DELETE", f"/api/v1/namespaces/default/configmaps/{meta['name']}")
    assert status == 200
    owned_path = f"/api/v1/namespaces/default/configmaps/{owned['metadata']['name']}"
    eventually(lambda: http.request("GET", owned_path)[0] == 404, 60, "owned object gone",
               interval=0.1)


def test_two_control_planes_do_not_collide(control_plane: ControlPlane) -> None:
    _owned(control_plane)
    with ControlPlane() as a, ControlPlane() as b:
        assert a.server != b.server
        assert a.kubeconfig_path != b.kubeconfig_path
        a.kubectl("create", "namespace", "only-in-a")
        assert b.kubectl("get", "namespace", "only-in-a", check=False).returncode != 0
        assert a.kubectl("get", "namespace", "only-in-a").returncode == 0
        dirs = (a.directory, b.directory)
    assert not any(Path(d).exists() for d in dirs)


def test_compaction_makes_old_resource_versions_gone(control_plane: ControlPlane) -> None:
    _owned(control_plane)
    # Without the watch cache, reads at an exact resourceVersion go to etcd, so compaction is
    # directly visible as 410 Gone (the watch cache would keep serving its own window).
    with ControlPlane(apiserver_args=["--watch-cache=false"]) as cp:
        http = cp.http
        _, listing = http.request("GET", "/api/v1/namespaces/default/configmaps")
        old_rv = listing["metadata"]["resourceVersion"]
        status, _ = http.request("POST", "/api/v1/namespaces/default/configmaps",
                                 {"metadata": {"name": "c1"}})
        assert status == 201
        path = ("/api/v1/namespaces/default/configmaps?resourceVersion="
                f"{old_rv}&resourceVersionMatch=Exact")
        assert http.request("GET", path)[0] == 200
        assert cp.compact_etcd() > int(old_rv)
        status, body = http.request("GET", path)
        assert status == 410, body


@pytest.mark.xdist_group("pods")
def test_pods_mode_runs_job_pods_to_succeeded_or_failed(pods_plane: ControlPlane) -> None:
    http = pods_plane.http
    ns = f"pods-{uuid.uuid4().hex[:6]}"
    assert http.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
    jobs = f"/apis/batch/v1/namespaces/{ns}/jobs"
    for name, run in (("ok", fake_run(1)), ("bad", fake_run(1, fail=True))):
        status, body = http.request("POST", jobs, {
            "metadata": {"name": name},
            "spec": {"backoffLimit": 0, "template": {
                "metadata": dict(run),
                "spec": {"restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "busybox"}]}}}})
        assert status == 201, body

    def finished(name: str) -> set[str]:
        _, job = http.request("GET", f"{jobs}/{name}")
        return {c["type"] for c in (job.get("status") or {}).get("conditions") or []
                if c["status"] == "True"} & {"Complete", "Failed"}

    eventually(lambda: finished("ok") and finished("bad"), 90, "both Jobs finished",
               interval=0.1)
    assert (finished("ok"), finished("bad")) == ({"Complete"}, {"Failed"})
    _, pods = http.request("GET", f"/api/v1/namespaces/{ns}/pods")
    phases = {p["metadata"]["labels"]["job-name"]: (p["status"]["phase"], p["spec"]["nodeName"])
              for p in pods["items"]}
    assert phases["ok"][0] == "Succeeded" and phases["bad"][0] == "Failed"
    assert {node for _, node in phases.values()} <= set(pods_plane.fake_node_names)
