"""Informer sync time, memory per cached object and watch throughput vs client-go.

Scenario: ``--objects`` ConfigMaps (10 data keys of ~40 bytes, 3 labels) in one namespace of a
real kube-apiserver (a fresh :class:`pyctrl.testing.envtest.ControlPlane`, or ``--kubeconfig``).
Each implementation runs in its own subprocess and reports:

* ``sync_seconds``: informer start until ``has_synced`` (the whole paged LIST into the cache).
* ``bytes_per_object``: process RSS growth over the empty baseline (measured after the
  imports and client set-up, GC'd both times) divided by the objects cached.
* ``events_per_s``: right before the subprocess starts, every object is updated once; the
  informer is then started from the state at the resourceVersion before those updates (an
  exact LIST at that version) so its watch replays all N updates; events per second counts
  from the watch call to the N-th update delivered to a handler.

``--modes``: how the informers sync. ``list`` (the default) is a paged LIST then a WATCH;
``watch-list`` is a streaming list (``sendInitialEvents``, KEP-3157: pyctrl's
``watch_list=True``, client-go's ``WatchListClient`` feature, which client-go v0.35 turns on
by default, so the ``list`` mode sets ``KUBE_FEATURE_WatchListClient=false`` for it). Each
mode runs both implementations; keys of a mode other than ``list`` carry its name
(``pyctrl_watch_list``, ``client_go_watch_list``, ``ratio_watch_list``). With an owned
control plane the pyctrl child also reports ``apiserver_cpu_sync_seconds``: kube-apiserver's
CPU from informer start to synced (the server's cost of the mode). The events phase always
starts from a LIST snapshot (both implementations), so it measures the watch either way.

Implementations: pyctrl's SharedIndexInformer (JSON decoded by orjson, managedFields dropped),
pyctrl's typed informer (``pyctrl_typed``: the same informer over
:class:`pyctrl.cache.typed.TypedListWatch`, pages and events decoded by msgspec straight
into a ConfigMap Struct and cached frozen, as ``SharedInformerFactory.informer_for(cls)``
builds it; ``ratio_typed`` is it over client-go; ``--no-typed`` skips it), client-go
v0.35.4's SharedInformerFactory informer using protobuf (bench/anchors/informer),
and the ``kubernetes`` package's ``kubernetes.informer.SharedInformer`` (typed models) when
the installed version has it. ``ratio`` is pyctrl / client-go.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.gobuild import anchor_binary, build_anchor

GO_BINARY = anchor_binary("informer")
GOALS = {"sync_seconds": "<= 1.0", "bytes_per_object": "<= 1.0", "events_per_s": ">= 0.7"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--objects", type=int, default=10_000, help="ConfigMaps to create")
    parser.add_argument("--kubeconfig", default=None, help="use this cluster, not envtest")
    parser.add_argument("--page-size", type=int, default=500, help="pyctrl LIST page size")
    parser.add_argument("--modes", default="list",
                        help="comma-separated sync modes: list, watch-list")
    parser.add_argument("--no-go", action="store_true", help="skip the client-go anchor")
    parser.add_argument("--no-typed", action="store_true", help="skip pyctrl's typed informer")
    parser.add_argument("--no-kubernetes", action="store_true",
                        help="skip the kubernetes package's informer")


# -- helpers ----------------------------------------------------------------------------------
def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int) -> float:
    """utime + stime of process ``pid`` (0.0 when unknown)."""
    if pid <= 0:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settled_rss() -> int:
    gc.collect()
    return rss_bytes()


def configmap(i: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"bench-{i:05d}",
                     "labels": {"app": "bench", "tier": f"t{i % 7}", "shard": f"s{i % 13}"}},
        "data": {f"key-{k}": f"{i:05d}-{k}-" + "x" * 32 for k in range(10)},
    }


def _client(kubeconfig: str) -> Any:
    from pyctrl.kube.client import RESTClient

    return RESTClient.from_kubeconfig(kubeconfig, qps=5000, burst=5000, pool_maxsize=32)


def populate(kubeconfig: str, namespace: str, n: int) -> None:
    from pyctrl.kube.resource import CONFIGMAPS, NAMESPACES

    client = _client(kubeconfig)
    client.create(NAMESPACES, {"metadata": {"name": namespace}})
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: client.create(CONFIGMAPS, configmap(i), namespace), range(n)))


def update_round(kubeconfig: str, namespace: str, n: int) -> str:
    """Update every object once; returns the resourceVersion from just before."""
    from pyctrl.kube.resource import CONFIGMAPS

    client = _client(kubeconfig)
    rv: str = client.list(CONFIGMAPS, namespace, limit=1)["metadata"]["resourceVersion"]
    stamp = uuid.uuid4().hex[:8]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: client.patch(CONFIGMAPS, f"bench-{i:05d}",
                                             {"data": {"key-0": stamp}}, namespace), range(n)))
    return rv


# -- children (one process each) ----------------------------------------------------------------
def configmap_kind() -> type[Any]:
    """A typed ConfigMap (the fields a ConfigMap has besides the object's common ones)."""
    from pyctrl import api

    class ConfigMap(api.Object):
        data: dict[str, str] = api.field(default_factory=dict)
        binary_data: dict[str, str] = api.field(default_factory=dict)
        immutable: bool | None = None

    return ConfigMap


def child_pyctrl(kubeconfig: str, namespace: str, n: int, rv_before: str,
                 page_size: int, watch_list: bool = False,
                 apiserver_pid: int = 0, typed: bool = False) -> dict[str, Any]:
    from pyctrl.cache.informer import SharedIndexInformer
    from pyctrl.cache.listwatch import ListerWatcher, ListWatch
    from pyctrl.cache.processor import ResourceEventHandlerFuncs
    from pyctrl.cache.typed import TypedListWatch, fill_type
    from pyctrl.kube.interface import RawObject, WatchStream
    from pyctrl.kube.resource import CONFIGMAPS

    kind = configmap_kind() if typed else None

    def informer_over(lw: ListWatch, **kwargs: Any) -> SharedIndexInformer:
        if kind is None:
            return SharedIndexInformer(lw, **kwargs)
        typed_lw: ListerWatcher = TypedListWatch(lw, kind)
        return SharedIndexInformer(typed_lw, transform=fill_type(CONFIGMAPS),
                                   detect_mutations=False, **kwargs)

    client = _client(kubeconfig)
    client.list(CONFIGMAPS, namespace, limit=1)  # warm the connection pool like client-go
    out: dict[str, Any] = {}
    baseline = settled_rss()
    stop = threading.Event()
    server_cpu = cpu_seconds(apiserver_pid)
    start = time.perf_counter()
    informer = informer_over(ListWatch(client, CONFIGMAPS, namespace), name="bench",
                             page_size=page_size, watch_list=watch_list)
    t = threading.Thread(target=informer.run, args=(stop,))
    t.start()
    informer.wait_for_sync(stop)
    out["sync_seconds"] = time.perf_counter() - start
    if apiserver_pid > 0:
        out["apiserver_cpu_sync_seconds"] = cpu_seconds(apiserver_pid) - server_cpu
    count = len(informer.get_indexer().list_keys())
    after = settled_rss()
    out.update(objects=count, rss_growth_bytes=after - baseline,
               bytes_per_object=(after - baseline) / max(count, 1))
    stop.set()
    t.join()
    del informer
    gc.collect()

    snapshot: RawObject = client.list(CONFIGMAPS, namespace, resource_version=rv_before,
                           resource_version_match="Exact")
    watch_start: list[float] = []

    class SnapshotListWatch(ListWatch):
        def list(self, *, limit: int | None, continue_: str | None,
                 resource_version: str | None) -> RawObject:
            return snapshot

        def watch(self, *, resource_version: str, timeout_seconds: int,
                  allow_watch_bookmarks: bool) -> WatchStream:
            if not watch_start:
                watch_start.append(time.perf_counter())
            return super().watch(resource_version=resource_version,
                                 timeout_seconds=timeout_seconds,
                                 allow_watch_bookmarks=allow_watch_bookmarks)

    done = threading.Event()
    seen = [0]

    def on_update(old: RawObject, new: RawObject) -> None:
        seen[0] += 1
        if seen[0] == n:
            done.set()

    stop2 = threading.Event()
    inf2 = informer_over(SnapshotListWatch(client, CONFIGMAPS, namespace), name="ev")
    inf2.add_event_handler(ResourceEventHandlerFuncs(update_func=on_update))
    t2 = threading.Thread(target=inf2.run, args=(stop2,))
    t2.start()
    if done.wait(180):
        out["events"] = n
        out["events_per_s"] = n / (time.perf_counter() - watch_start[0])
    else:
        out["events_error"] = f"timed out after {seen[0]} updates"
    stop2.set()
    t2.join()
    client.close()
    return out


def child_kubernetes(kubeconfig: str, namespace: str, n: int, rv_before: str) -> dict[str, Any]:
    try:
        k8s_informer: Any = importlib.import_module("kubernetes.informer")
    except ImportError:
        return {"skipped": "kubernetes.informer is not in the installed kubernetes package"}
    k8s: Any = importlib.import_module("kubernetes.client")
    config: Any = importlib.import_module("kubernetes.config")
    ADDED, MODIFIED = k8s_informer.ADDED, k8s_informer.MODIFIED  # noqa: N806
    SharedInformer = k8s_informer.SharedInformer  # noqa: N806

    config.load_kube_config(kubeconfig)
    api = k8s.CoreV1Api()
    api.list_namespaced_config_map(namespace, limit=1)
    out: dict[str, Any] = {}
    baseline = settled_rss()
    synced = threading.Event()
    added = [0]

    def on_add(obj: Any) -> None:
        added[0] += 1
        if added[0] == n:
            synced.set()

    start = time.perf_counter()
    inf = SharedInformer(api.list_namespaced_config_map, namespace=namespace)
    inf.add_event_handler(ADDED, on_add)
    inf.start()
    if not synced.wait(300):
        # Its list/watch loop has no stop-aware timeout: report and leave without joining.
        print(json.dumps({"error": f"did not sync in 300 s ({added[0]} adds)"}), flush=True)
        os._exit(0)
    out["sync_seconds"] = time.perf_counter() - start
    count = len(inf.cache.list_keys())
    after = settled_rss()
    out.update(objects=count, rss_growth_bytes=after - baseline,
               bytes_per_object=(after - baseline) / max(count, 1))
    inf.stop()
    del inf
    gc.collect()

    done = threading.Event()
    seen = [0]

    def on_modified(obj: Any) -> None:
        seen[0] += 1
        if seen[0] == n:
            done.set()

    inf2 = SharedInformer(api.list_namespaced_config_map, namespace=namespace)
    inf2._resource_version = rv_before  # skip the initial list: watch from before the updates
    inf2.add_event_handler(MODIFIED, on_modified)
    start = time.perf_counter()
    inf2.start()
    if done.wait(300):
        out["events"] = n
        out["events_per_s"] = n / (time.perf_counter() - start)
    else:
        out["events_error"] = f"timed out after {seen[0]} updates"
    inf2.stop()
    return out


def _run_child(kind: str, kubeconfig: str, namespace: str, n: int, rv: str,
               page_size: int, mode: str = "list", apiserver_pid: int = 0) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.informer", "--child", kind, "--kubeconfig", kubeconfig,
           "--namespace", namespace, "--objects", str(n), "--rv-before", rv,
           "--page-size", str(page_size), "--apiserver-pid", str(apiserver_pid)]
    if mode == "watch-list":
        cmd.append("--watch-list")
    if kind == "pyctrl-typed":
        cmd[cmd.index("--child") + 1] = "pyctrl"
        cmd.append("--typed")
    if kind == "client-go":
        cmd = [str(GO_BINARY), "--kubeconfig", kubeconfig, "--namespace", namespace,
               "--objects", str(n), "--rv-before", rv]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
           "KUBE_FEATURE_WatchListClient": "true" if mode == "watch-list" else "false"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200,
                          check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": f"exit {proc.returncode}: {proc.stderr[-2000:]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def build_go_binary() -> Path | None:
    """Build (or reuse) the anchor binary; None when Go is not available."""
    return build_anchor("informer")


def run(args: argparse.Namespace) -> dict[str, Any]:
    n: int = args.objects
    control_plane = None
    kubeconfig: str | None = args.kubeconfig
    if kubeconfig is None:
        from pyctrl.testing.envtest import ControlPlane

        control_plane = ControlPlane().start()
        kubeconfig = control_plane.kubeconfig_path
    try:
        namespace = f"bench-informer-{uuid.uuid4().hex[:6]}"
        t0 = time.perf_counter()
        populate(kubeconfig, namespace, n)
        result: dict[str, Any] = {"objects": n, "populate_seconds": time.perf_counter() - t0}
        modes = [m.strip() for m in args.modes.split(",") if m.strip()]
        if not modes or set(modes) - {"list", "watch-list"}:
            raise SystemExit(f"--modes: list and/or watch-list, not {args.modes!r}")
        kinds = ["pyctrl"] + ([] if args.no_typed else ["pyctrl-typed"])
        if not args.no_go and build_go_binary() is not None:
            kinds.append("client-go")
        apiserver_pid = (control_plane.apiserver_pid or 0) if control_plane else 0
        for mode in modes:
            suffix = "" if mode == "list" else "_" + mode.replace("-", "_")
            for kind in kinds:
                rv = update_round(kubeconfig, namespace, n)
                result[kind.replace("-", "_") + suffix] = _run_child(
                    kind, kubeconfig, namespace, n, rv, args.page_size, mode, apiserver_pid)
            go = result.get("client_go" + suffix, {})
            for impl, name in (("pyctrl", "ratio"), ("pyctrl_typed", "ratio_typed")):
                py = result.get(impl + suffix)
                if py is None:
                    continue
                ratio: dict[str, float] = {}
                for key in ("sync_seconds", "bytes_per_object", "events_per_s"):
                    if (isinstance(py.get(key), float) and isinstance(go.get(key), float)
                            and go[key]):
                        ratio[key] = py[key] / go[key]
                result[name + suffix] = ratio
        if not args.no_kubernetes:
            rv = update_round(kubeconfig, namespace, n)
            result["kubernetes"] = _run_child("kubernetes", kubeconfig, namespace, n, rv,
                                              args.page_size)
        result["goals"] = GOALS
        return result
    finally:
        if control_plane is not None:
            control_plane.stop()


def _child_main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--child", required=True)
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--objects", type=int, required=True)
    p.add_argument("--rv-before", required=True)
    p.add_argument("--page-size", type=int, default=500)
    p.add_argument("--watch-list", action="store_true")
    p.add_argument("--apiserver-pid", type=int, default=0)
    p.add_argument("--typed", action="store_true")
    a = p.parse_args()
    if a.child == "pyctrl":
        out = child_pyctrl(a.kubeconfig, a.namespace, a.objects, a.rv_before, a.page_size,
                           a.watch_list, a.apiserver_pid, a.typed)
    else:
        out = child_kubernetes(a.kubeconfig, a.namespace, a.objects, a.rv_before)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    _child_main()
