"""Shared checks of the chaos suite: the lenient CRD, and the run ledger (dupes, misses).

A *run* is a Job controlled by a CronJob, identified by its ``scheduled-timestamp``
annotation. :func:`run_ledger` groups the Jobs of a namespace by owner and scheduled time;
:func:`assert_exactly_once` fails on any (CronJob, time) with two Jobs and on any CronJob
missing a run for a tick in the given range.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cronjob_controller.api import SCHEDULED_TIMESTAMP_ANNOTATION
from pyctrl.kube import JOBS, RESTClient
from pyctrl.ownerrefs import controller_of
from pyctrl.testing.envtest import load_manifests

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[3]
CRD_FILE = ROOT / "crds" / "cronjobs.batch.pyctrl.io.yaml"


# (section, field) of the lenient CRD that take any value, of any type.
ANY_VALUE = (("spec", "concurrencyPolicy"), ("spec", "suspend"),
             ("spec", "successfulJobsHistoryLimit"), ("status", "active"))


def lenient_crds() -> list[Obj]:
    """The CronJob CRD as an older, laxer version served it: no CEL rules, nothing required
    under ``spec``, and ``spec.jobTemplate`` kept as-is (unknown fields preserved) instead of
    the embedded batch/v1 schema, whose own ``required`` lists and list-map keys must stay
    intact if it is kept at all. :data:`ANY_VALUE` fields take any value at all (objects that
    do not decode into the typed CronJob: test_bad_input_poison.py)."""
    crds = [copy.deepcopy(d) for d in load_manifests([CRD_FILE])
            if d.get("kind") == "CustomResourceDefinition"]
    assert crds, f"no CRD in {CRD_FILE}"

    def drop_cel(node: Any) -> None:
        if isinstance(node, dict):
            node.pop("x-kubernetes-validations", None)
            for value in node.values():
                drop_cel(value)
        elif isinstance(node, list):
            for item in node:
                drop_cel(item)

    for crd in crds:
        for version in crd["spec"]["versions"]:
            root = version["schema"]["openAPIV3Schema"]
            drop_cel(root)
            spec = root["properties"]["spec"]
            spec.pop("required", None)
            spec["properties"]["jobTemplate"] = {
                "type": "object", "x-kubernetes-preserve-unknown-fields": True}
            for section, field in ANY_VALUE:
                root["properties"][section]["properties"][field] = {
                    "x-kubernetes-preserve-unknown-fields": True}
    return crds


def scheduled_time(job: Obj) -> datetime:
    raw = (job["metadata"].get("annotations") or {})[SCHEDULED_TIMESTAMP_ANNOTATION]
    return datetime.fromisoformat(raw.replace("Z", "+00:00")).astimezone(UTC)


def controller_name(job: Obj) -> str | None:
    ref = controller_of(job)
    return None if ref is None else str(ref["name"])


def run_ledger(jobs: Iterable[Obj]) -> dict[str, dict[datetime, list[str]]]:
    """owner name -> scheduled time -> names of the Jobs for that run."""
    ledger: dict[str, dict[datetime, list[str]]] = defaultdict(lambda: defaultdict(list))
    for job in jobs:
        owner = controller_name(job)
        if owner is not None:
            ledger[owner][scheduled_time(job)].append(job["metadata"]["name"])
    return ledger


def list_jobs(client: RESTClient, namespace: str) -> list[Obj]:
    return list(client.list(JOBS, namespace)["items"])


def ticks_between(first: datetime, last: datetime) -> list[datetime]:
    out, t = [], first
    while t <= last:
        out.append(t)
        t += timedelta(minutes=1)
    return out


def assert_exactly_once(jobs: Iterable[Obj], owners: Iterable[str], first: datetime,
                        last: datetime) -> None:
    """No (owner, time) with two Jobs; every owner has a Job for every tick first..last."""
    ledger = run_ledger(jobs)
    dupes = {(o, t.isoformat()): names for o, runs in ledger.items()
             for t, names in runs.items() if len(names) > 1}
    assert not dupes, f"duplicate runs: {dupes}"
    ticks = ticks_between(first, last)
    missed = {o: [t.isoformat() for t in ticks if t not in ledger.get(o, {})]
              for o in owners}
    missed = {o: ts for o, ts in missed.items() if ts}
    assert not missed, f"missed runs (ticks {ticks[0]}..{ticks[-1]}): {missed}"
