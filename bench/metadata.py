"""Metadata-only vs full LISTs: bytes on the wire, decode CPU and cache bytes per object.

Scenario: ``--objects`` Jobs shaped like the CronJob controller's (labels, a controller owner
reference, one container with command, env and resources; the API server adds its defaults)
or ConfigMaps (``--kind configmaps``: bench.informer's, 10 data keys) in one namespace of a
real kube-apiserver (a fresh :class:`pyctrl.testing.envtest.ControlPlane`, or
``--kubeconfig``). For each mode, ``full`` (``application/json``) and ``metadata``
(``PartialObjectMetadataList``), the whole collection is listed in pages of ``--page-size``
with the RESTClient's ``list_raw`` and reported:

* ``wire_bytes_per_object``: response body bytes / objects.
* ``decode_us_per_object``: orjson decoding of those bodies (process CPU, the best of
  ``--repeat`` rounds, the collector paused as the Reflector does) / objects.
* ``transform_us_per_object``: what the informer factory does next (retype, reduce to the
  metadata for ``metadata``; drop managedFields for both), best of ``--repeat``.
* ``cache_bytes_per_object``: memory the transformed objects hold (tracemalloc, measured in
  a separate round from the timings).

``ratio`` is metadata / full. Decoding is CPU only: every replica of a sharded controller pays
it for every object of every watch it holds, so this is what ShardWatch saves per event.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson

from bench.informer import configmap


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--objects", type=int, default=2000, help="objects to create")
    parser.add_argument("--kind", choices=("jobs", "configmaps"), default="jobs")
    parser.add_argument("--kubeconfig", default=None, help="use this cluster, not envtest")
    parser.add_argument("--page-size", type=int, default=500, help="LIST page size")
    parser.add_argument("--repeat", type=int, default=5, help="timing rounds (best taken)")


def job(i: int) -> dict[str, Any]:
    """A Job as the CronJob controller creates one (owner UID made up: nothing collects it)."""
    name = f"bench-{i:05d}-28912345"
    return {
        "metadata": {
            "name": name,
            "labels": {"app": "bench", "cronjob.pyctrl.io/name": f"bench-{i:05d}"},
            "annotations": {"batch.kubernetes.io/cronjob-scheduled-timestamp":
                            "2026-11-26T08:00:00Z"},
            "ownerReferences": [{"apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
                                 "name": f"bench-{i:05d}", "controller": True,
                                 "blockOwnerDeletion": True,
                                 "uid": str(uuid.UUID(int=i + 1))}],
        },
        "spec": {"suspend": True, "backoffLimit": 2, "template": {
            "metadata": {"labels": {"app": "bench"}},
            "spec": {"restartPolicy": "OnFailure", "containers": [{
                "name": "main", "image": "registry.example/bench/worker:1.2.3",
                "command": ["/bin/worker", "--once", f"--shard={i % 13}"],
                "env": [{"name": "MODE", "value": "batch"}, {"name": "LEVEL", "value": "info"}],
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                              "limits": {"memory": "64Mi"}},
            }]},
        }},
    }


def populate(client: Any, resource: Any, namespace: str, n: int, kind: str) -> None:
    from pyctrl.kube.resource import NAMESPACES

    make = job if kind == "jobs" else configmap
    client.create(NAMESPACES, {"metadata": {"name": namespace}})
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: client.create(resource, make(i), namespace), range(n)))


def pages(client: Any, resource: Any, namespace: str, limit: int,
          metadata_only: bool) -> list[bytes]:
    out: list[bytes] = []
    cont: str | None = None
    while True:
        body: bytes = client.list_raw(resource, namespace, limit=limit, continue_=cont,
                                      metadata_only=metadata_only)
        out.append(body)
        cont = (orjson.loads(body).get("metadata") or {}).get("continue") or None
        if not cont:
            return out


def _transform(resource: Any, metadata_only: bool) -> Any:
    from pyctrl.cache.factory import _as_metadata, _with_type
    from pyctrl.cache.mutation import drop_managed_fields

    return (_as_metadata if metadata_only else _with_type)(resource, drop_managed_fields)


def measure(bodies: list[bytes], transform: Any, repeat: int) -> dict[str, float]:
    n = 0
    decode = transform_t = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            t0 = time.process_time()
            decoded = [orjson.loads(b) for b in bodies]
            t1 = time.process_time()
            cached = [transform(o) for page in decoded for o in page["items"]]
            t2 = time.process_time()
        finally:
            gc.enable()
        n = len(cached)
        decode, transform_t = min(decode, t1 - t0), min(transform_t, t2 - t1)
        del decoded, cached
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = [transform(o) for b in bodies for o in orjson.loads(b)["items"]]
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del kept
    wire = sum(len(b) for b in bodies)
    return {"objects": n, "wire_bytes_per_object": wire / max(n, 1),
            "decode_us_per_object": decode * 1e6 / max(n, 1),
            "transform_us_per_object": transform_t * 1e6 / max(n, 1),
            "cache_bytes_per_object": held / max(n, 1)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from pyctrl.kube.client import RESTClient
    from pyctrl.kube.resource import CONFIGMAPS, JOBS

    resource = JOBS if args.kind == "jobs" else CONFIGMAPS
    control_plane = None
    kubeconfig: str | None = args.kubeconfig
    if kubeconfig is None:
        from pyctrl.testing.envtest import ControlPlane

        control_plane = ControlPlane().start()
        kubeconfig = control_plane.kubeconfig_path
    client = RESTClient.from_kubeconfig(kubeconfig, qps=5000, burst=5000)
    try:
        namespace = f"bench-metadata-{uuid.uuid4().hex[:6]}"
        populate(client, resource, namespace, args.objects, args.kind)
        result: dict[str, Any] = {"kind": args.kind, "objects": args.objects}
        for mode, meta in (("full", False), ("metadata", True)):
            bodies = pages(client, resource, namespace, args.page_size, meta)
            result[mode] = measure(bodies, _transform(resource, meta), args.repeat)
        full, md = result["full"], result["metadata"]
        result["ratio"] = {k: md[k] / full[k] for k in full
                           if k != "objects" and full[k]}
        return result
    finally:
        client.close()
        if control_plane is not None:
            control_plane.stop()
