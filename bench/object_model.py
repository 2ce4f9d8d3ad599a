"""Object forms: decode time and memory per object of a raw dict, a typed Struct, an Unstructured.

From the JSON bytes of a ConfigMap (a few data keys) and of a realistic Job
(``bench/fixtures/job.json``), per object and form:

* ``decode_us``: microseconds to decode the bytes (the best of 5 batches of
  ``--objects``/5 decodes; median over ``--runs`` runs);
* ``bytes``: memory the decoded object keeps (tracemalloc, ``--objects`` live objects,
  divided by their number; the bytes decoded from are not counted);
* ``key_us``: microseconds for the cache key's two reads (``meta.namespace`` and
  ``meta.name``) of one decoded object.

Forms: ``dict`` (``orjson.loads``, what a raw informer caches), ``typed`` (the
:mod:`pyctrl.models` class, ``pyctrl.api.decode``), ``unstructured``
(``Unstructured.of(R)``: typed metadata, the rest as JSON); and for the metadata-only
informers, decoding a ``PartialObjectMetadata`` body: ``meta-dict`` (the ``{apiVersion,
kind, metadata}`` dict a metadata-only informer caches today), ``meta-unstructured``
(an Unstructured holding only the metadata) and ``meta-typed``
(:class:`pyctrl.api.PartialObjectMetadata`: apiVersion, kind, typed metadata).
docs/DESIGN.md ("One object model") quotes the figures.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson

from bench.models import _bytes_per_object, _time_us, fixture
from pyctrl import api
from pyctrl.api.unstructured import Unstructured
from pyctrl.kube import CONFIGMAPS, JOBS, meta
from pyctrl.models.batch_v1 import Job
from pyctrl.models.core_v1 import ConfigMap

Decode = Callable[[bytes], object]


def configmap() -> bytes:
    """A ConfigMap as the apiserver sends it (managedFields stripped)."""
    return orjson.dumps({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "app-config", "namespace": "web",
                     "uid": "7d1c9a2e-3b4f-4e8a-9c61-2d5e8f0a1b3c",
                     "resourceVersion": "184467", "creationTimestamp": "2026-11-26T08:00:00Z",
                     "labels": {"app": "web", "tier": "frontend"},
                     "annotations": {"owner": "ops"}},
        "data": {"LOG_LEVEL": "info", "WORKERS": "4", "greeting.txt": "hello, world\n"}})


def partial(body: bytes) -> bytes:
    """The same object as a metadata-only LIST sends it (PartialObjectMetadata)."""
    raw = orjson.loads(body)
    return orjson.dumps({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                         "metadata": raw["metadata"]})


def _meta_dict(resource_api: str, kind: str) -> Decode:
    def decode(b: bytes) -> object:  # what the factory's _as_metadata keeps
        raw = orjson.loads(b)
        return {"apiVersion": resource_api, "kind": kind, "metadata": raw["metadata"]}
    return decode


def forms() -> dict[str, dict[str, tuple[Decode, bytes]]]:
    """Form -> kind -> (decoder, the bytes it decodes)."""
    cm, job = configmap(), fixture("job")
    out: dict[str, dict[str, tuple[Decode, bytes]]] = {
        "dict": {"configmap": (orjson.loads, cm), "job": (orjson.loads, job)},
        "typed": {"configmap": (api.json_decoder(ConfigMap).decode, cm),
                  "job": (api.json_decoder(Job).decode, job)},
        "unstructured": {
            "configmap": (api.json_decoder(Unstructured.of(CONFIGMAPS)).decode, cm),
            "job": (api.json_decoder(Unstructured.of(JOBS)).decode, job)},
    }
    meta_forms: dict[str, Callable[[Any], Decode]] = {
        "meta-dict": lambda r: _meta_dict(r.api_version, r.kind),
        "meta-unstructured": lambda r: api.json_decoder(Unstructured.of(r)).decode,
        "meta-typed": lambda r: api.json_decoder(api.PartialObjectMetadata.of(r)).decode,
    }
    for name, make in meta_forms.items():
        out[name] = {"configmap": (make(CONFIGMAPS), partial(cm)),
                     "job": (make(JOBS), partial(job))}
    return out


def _key_us(obj: Any, count: int) -> float:
    namespace, name = meta.namespace, meta.name
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(count):
            namespace(obj)
            name(obj)
        best = min(best, (time.perf_counter() - start) / count)
    return best * 1e6


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--objects", type=int, default=2000, help="decodes per run")
    parser.add_argument("--runs", type=int, default=3, help="runs (median)")


def run(args: argparse.Namespace) -> dict[str, object]:
    table = forms()
    result: dict[str, object] = {"objects": args.objects, "runs": args.runs}
    for name, kinds in table.items():
        row: dict[str, object] = {}
        for kind, (decode, data) in kinds.items():
            times = [_time_us(decode, data, args.objects) for _ in range(args.runs)]
            mem = [_bytes_per_object(decode, data, args.objects) for _ in range(args.runs)]
            row[kind] = {"json_bytes": len(data), "decode_us": statistics.median(times),
                         "bytes": statistics.median(mem),
                         "key_us": _key_us(decode(data), args.objects)}
        result[name] = row
    return result
