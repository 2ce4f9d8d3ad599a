"""Typed reads: cost per read of a cached CronJob as its pyctrl.api class vs the raw dict.

Per read, over ``objects`` CronJob-sized objects in an informer Indexer (best of ``repeat``
passes, microseconds per object), typed as the operator's own CRD classes
(:class:`cronjob_controller.crd.CronJob`, so the figures follow the shipped schema):

* ``raw_get_us``: ``Lister.get`` and three field reads from the dict (today's hot path);
* ``typed_get_us``: ``Lister.get`` + ``pyctrl.api.decode`` (a fresh typed object, the
  cached dict only read) and the same three reads as attributes;
* ``deepcopy_get_us``: ``Lister.get`` + ``copy.deepcopy``, what a reconciler that mutates a
  raw object must pay instead;
* ``status_patch_us``: ``pyctrl.api.status_patch`` after changing two status fields.

With ``--candidates`` it also times the decoders docs/DESIGN.md compares (decode only, no
lister): msgspec (what pyctrl.api uses), stdlib dataclasses with a cached per-class decoder,
and pydantic v2 ``model_validate``, the last two over dataclasses/models mirrored from the
same Structs (never declared again here). Run it on a quiet machine; the figures are what
docs/DESIGN.md quotes.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime as dt
import time
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any

import msgspec

from cronjob_controller.crd import CronJob
from pyctrl import api
from pyctrl.cache import Indexer, IndexerLister, meta_namespace_key


def cronjob(i: int) -> dict[str, Any]:
    """A CronJob as the informer caches it (managedFields already stripped)."""
    return {
        "apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
        "metadata": {"name": f"cj-{i}", "namespace": f"ns-{i % 10}",
                     "uid": f"0b7c2a1e-{i:08d}-4a0e-9f5e", "resourceVersion": str(1000 + i),
                     "generation": 3, "creationTimestamp": "2026-11-26T08:00:00Z",
                     "labels": {"app": "demo", "team": "batch", "pyctrl.io/shard": "3"},
                     "annotations": {"note": "hello", "owner": "ops"}},
        "spec": {"schedule": "*/5 * * * *", "timeZone": "Europe/Berlin",
                 "startingDeadlineSeconds": 200, "concurrencyPolicy": "Forbid",
                 "suspend": False, "successfulJobsHistoryLimit": 3,
                 "failedJobsHistoryLimit": 1,
                 "jobTemplate": {"metadata": {"labels": {"app": "demo"}}, "spec": {
                     "backoffLimit": 2, "template": {"spec": {
                         "restartPolicy": "OnFailure",
                         "containers": [{"name": "main", "image": "busybox:1.36",
                                         "command": ["sh", "-c", "date; echo hello"],
                                         "resources": {"requests": {"cpu": "10m",
                                                                    "memory": "16Mi"}}}]}}}}},
        "status": {"active": [{"apiVersion": "batch/v1", "kind": "Job",
                               "name": f"cj-{i}-29000000", "namespace": f"ns-{i % 10}",
                               "uid": "1f0e", "resourceVersion": "99"}],
                   "activeCount": 1, "lastScheduleTime": "2026-11-26T08:05:00Z",
                   "lastSuccessfulTime": "2026-11-26T08:00:10Z",
                   "nextScheduleTime": "2026-11-26T08:10:00Z", "observedGeneration": 3,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "Scheduled",
                                   "message": "next run at 08:10",
                                   "lastTransitionTime": "2026-11-26T08:00:00Z",
                                   "observedGeneration": 3}]},
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--objects", type=int, default=10_000, help="cached objects")
    parser.add_argument("--repeat", type=int, default=3, help="passes; the best counts")
    parser.add_argument("--candidates", action="store_true",
                        help="also time the decoders docs/DESIGN.md compares")


def _best_us(fn: Callable[[], object], count: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best / count * 1e6


def run(args: argparse.Namespace) -> dict[str, object]:
    raws = [cronjob(i) for i in range(args.objects)]
    indexer = Indexer()
    for raw in raws:
        indexer.add(raw)
    lister = IndexerLister(indexer)
    keys = [(r["metadata"]["namespace"], r["metadata"]["name"]) for r in raws]
    assert meta_namespace_key(raws[0]) == f"{keys[0][0]}/{keys[0][1]}"

    def raw_reads() -> None:
        for ns, name in keys:
            obj = lister.get(ns, name)
            (obj["spec"]["schedule"], obj["spec"].get("suspend", False),
             obj["status"].get("lastScheduleTime"))

    def typed_reads() -> None:
        for ns, name in keys:
            cj = api.decode(CronJob, lister.get(ns, name))
            cj.spec.schedule, cj.spec.suspend, cj.status.last_schedule_time  # noqa: B018

    def deepcopy_reads() -> None:
        for ns, name in keys:
            copy.deepcopy(lister.get(ns, name))

    decoded = [api.replace(cj, status=api.replace(cj.status, active_count=0,
                                                  observed_generation=4))
               for cj in (api.decode(CronJob, r) for r in raws)]

    def patches() -> None:
        for raw, cj in zip(raws, decoded, strict=True):
            api.status_patch(raw, cj.status)

    n, r = args.objects, args.repeat
    result: dict[str, object] = {
        "objects": n,
        "raw_get_us": _best_us(raw_reads, n, r),
        "typed_get_us": _best_us(typed_reads, n, r),
        "deepcopy_get_us": _best_us(deepcopy_reads, n, r),
        "status_patch_us": _best_us(patches, n, r),
    }
    if args.candidates:
        result["decode_only_us"] = _candidates(raws, r)
    return result


# -- the candidates docs/DESIGN.md compares -----------------------------------------------------
def _candidates(raws: list[dict[str, Any]], repeat: int) -> dict[str, float]:
    n = len(raws)
    p_model = _pydantic_model()
    return {
        "msgspec": _best_us(lambda: [msgspec.convert(o, CronJob) for o in raws], n, repeat),
        "dataclasses": _best_us(lambda: [_dc_decode(DCronJob, o) for o in raws], n, repeat),
        "pydantic": _best_us(lambda: [p_model.model_validate(o) for o in raws], n, repeat),
    }


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


_MISSING = object()
_PLANS: dict[type, list[tuple[str, str, Callable[[Any], Any] | None]]] = {}


def _converter(tp: Any) -> Callable[[Any], Any] | None:
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _converter(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        inner = _converter(next(a for a in typing.get_args(tp) if a is not type(None)))
        return None if inner is None else (lambda v: None if v is None else inner(v))
    if origin is list:
        item = _converter(typing.get_args(tp)[0])
        return list if item is None else (lambda v: [item(x) for x in v])
    if origin is dict:
        value = _converter(typing.get_args(tp)[1])
        return dict if value is None else (lambda v: {k: value(x) for k, x in v.items()})
    if tp is dt.datetime:
        return dt.datetime.fromisoformat
    if dataclasses.is_dataclass(tp):
        cls = typing.cast(type, tp)
        return lambda v: _dc_decode(cls, v)
    return None


def _dc_decode(cls: type, raw: dict[str, Any]) -> Any:
    plan = _PLANS.get(cls)
    if plan is None:
        hints = typing.get_type_hints(cls, include_extras=True)
        plan = _PLANS[cls] = [(_camel(f.name), f.name, _converter(hints[f.name]))
                              for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, attr, conv in plan:
        value = raw.get(key, _MISSING)
        if value is not _MISSING:
            kwargs[attr] = value if conv is None else conv(value)
    return cls(**kwargs)


def _mirror(struct: type[msgspec.Struct], made: dict[type, type]) -> type:
    """A slotted keyword-only dataclass with ``struct``'s fields, nested Structs mirrored
    too (``made``: the mirrors so far, inner ones first), so every candidate decodes the
    shipped shape (cronjob_controller.crd), declared once."""
    if struct in made:
        return made[struct]
    fields: list[tuple[str, Any, Any]] = []
    for f in msgspec.structs.fields(struct):
        tp = _plain(f.type, made)
        if f.default is not msgspec.NODEFAULT:
            fields.append((f.name, tp, dataclasses.field(default=f.default)))
        elif f.default_factory is not msgspec.NODEFAULT:
            fields.append((f.name, tp, dataclasses.field(default_factory=f.default_factory)))
        else:
            fields.append((f.name, tp, dataclasses.field()))
    made[struct] = dataclasses.make_dataclass("D" + struct.__name__, fields, slots=True,
                                              kw_only=True)
    return made[struct]


def _plain(tp: Any, made: dict[type, type]) -> Any:
    """``tp`` without Annotated markers, its Structs replaced by their mirrors."""
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return _mirror(tp, made)
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _plain(typing.get_args(tp)[0], made)
    if origin in (list, dict):
        return origin[tuple(_plain(a, made) for a in typing.get_args(tp))]
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_plain(a, made) for a in typing.get_args(tp))]  # noqa: UP007
    return tp


_MIRRORS: dict[type, type] = {}
DCronJob = _mirror(CronJob, _MIRRORS)


def _pydantic_model() -> Any:
    """The same shapes as pydantic v2 models (built lazily: pydantic is optional here)."""
    import pydantic
    from pydantic.alias_generators import to_camel

    config = pydantic.ConfigDict(alias_generator=to_camel, populate_by_name=True)
    ns: dict[str, Any] = {}
    for cls in _MIRRORS.values():  # inner ones first
        fields: dict[str, Any] = {}
        hints = typing.get_type_hints(cls, include_extras=True)
        for f in dataclasses.fields(cls):
            tp = _swap(hints[f.name], ns)
            if f.default is not dataclasses.MISSING:
                fields[f.name] = (tp, f.default)
            elif f.default_factory is not dataclasses.MISSING:
                fields[f.name] = (tp, pydantic.Field(default_factory=f.default_factory))
            else:
                fields[f.name] = (tp, ...)
        ns[cls.__name__] = pydantic.create_model("P" + cls.__name__, __config__=config,
                                                 **fields)
    return ns[DCronJob.__name__]


def _swap(tp: Any, ns: dict[str, Any]) -> Any:
    """``tp`` with the dataclasses replaced by their pydantic models."""
    if isinstance(tp, type) and tp.__name__ in ns:
        return ns[tp.__name__]
    origin = typing.get_origin(tp)
    if origin in (list, dict):
        return origin[tuple(_swap(a, ns) for a in typing.get_args(tp))]
    if origin in (typing.Union, types.UnionType):
        args = [_swap(a, ns) for a in typing.get_args(tp)]
        return typing.Union[tuple(args)]  # noqa: UP007
    return tp
