"""The objects of ``bench.cronjob_skew``: CronJobs, their history Jobs, and the cleanup.

Contract:

* :func:`cronjob` is a CronJob whose Job template (:func:`job_template`) is ``suspend: true``,
  so no pod would ever run; the same body serves ``batch.pyctrl.io/v1`` (phases ``pyctrl``
  and ``pyctrl-sharded``) and ``batch/v1`` (phase ``upstream``). Its schedule is
  ``* * * * *``, or with ``tick`` (a unix time on a minute boundary) one that fires only at
  that minute of the year, in ``Etc/UTC`` (:func:`tick_schedule`).
* :func:`create_cronjobs` creates ``cj-00000`` .. from parallel threads, the first ``history``
  each with one finished Job (:func:`history_job`, marked Complete through the status
  subresource with :func:`finished_status`), retrying server errors; AlreadyExists counts as
  created.
* :func:`bench_client` is the bench's own client (``user_agent`` ``pyctrl-bench``, no
  client-side limit to speak of, a connection per creating thread).
* :func:`delete_all` deletes every CronJob of both kinds and every Job of a namespace,
  repeating a DELETE collection that outlasted the API server's request timeout.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from pyctrl.errors import AlreadyExists, ApiError
from pyctrl.kube import JOBS, RawObject, Resource, RESTClient
from pyctrl.testing.envtest import ControlPlane

__all__ = [
    "ANNOTATIONS",
    "BATCH_CRONJOBS",
    "PYCTRL_CRONJOBS",
    "bench_client",
    "create_cronjobs",
    "cronjob",
    "delete_all",
    "finished_status",
    "history_job",
    "job_template",
    "tick_schedule",
]

PYCTRL_CRONJOBS = Resource("batch.pyctrl.io", "v1", "cronjobs", "CronJob")
BATCH_CRONJOBS = Resource("batch", "v1", "cronjobs", "CronJob")
ANNOTATIONS = {  # the scheduled-timestamp annotation of each controller phase's Jobs
    "pyctrl": "batch.pyctrl.io/scheduled-timestamp",
    "pyctrl-sharded": "batch.pyctrl.io/scheduled-timestamp",
    "upstream": "batch.kubernetes.io/cronjob-scheduled-timestamp",
}


def job_template() -> dict[str, object]:
    """A valid batch/v1 JobTemplateSpec that never starts a pod."""
    return {"spec": {
        "suspend": True,
        "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "noop", "image": "busybox:1.36", "command": ["true"]}],
        }},
    }}


def tick_schedule(tick: float) -> str:
    """A cron schedule that fires at ``tick`` (UTC, on a minute boundary) and then a year on."""
    at = datetime.fromtimestamp(tick, UTC)
    return f"{at.minute} {at.hour} {at.day} {at.month} *"


def cronjob(name: str, tick: float | None = None) -> RawObject:
    """The bench's CronJob: every minute, or (``tick`` given) only at ``tick``."""
    spec: dict[str, object] = {"schedule": "* * * * *", "jobTemplate": job_template()}
    if tick is not None:
        spec |= {"schedule": tick_schedule(tick), "timeZone": "Etc/UTC"}
    return {"metadata": {"name": name}, "spec": spec}


def history_job(phase: str, owner: RawObject, minute: int) -> RawObject:
    """A Job ``owner`` (a created CronJob) ran at ``minute`` (unix minutes), before the bench."""
    meta = owner["metadata"]
    scheduled = datetime.fromtimestamp(minute * 60, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {
                "name": f"{meta['name']}-{minute}",
                "annotations": {ANNOTATIONS[phase]: scheduled},
                "ownerReferences": [{
                    "apiVersion": owner.get("apiVersion") or "batch/v1", "kind": "CronJob",
                    "name": meta["name"], "uid": meta["uid"],
                    "controller": True, "blockOwnerDeletion": True}]},
            "spec": job_template()["spec"]}


def finished_status(at: float) -> RawObject:
    """A Job status that reads Complete (batch/v1 validation: SuccessCriteriaMet first)."""
    now = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"status": {"startTime": now, "completionTime": now, "succeeded": 1, "conditions": [
        {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now},
        {"type": "Complete", "status": "True", "lastTransitionTime": now}]}}


def _retrying(call: Callable[[], RawObject]) -> RawObject | None:
    """``call()``, retried on server errors; None on AlreadyExists."""
    for attempt in range(5):
        try:
            return call()
        except AlreadyExists:
            return None
        except ApiError:
            if attempt == 4:
                raise
            time.sleep(0.2 * (attempt + 1))
    return None


def create_cronjobs(client: RESTClient, phase: str, namespace: str, n: int, threads: int,
                    history: int = 0, tick: float | None = None) -> float:
    """Create ``cj-00000`` .. in parallel (``cronjob(name, tick)``), the first ``history``
    each with one finished Job; return the seconds it took.

    The Jobs ran at the start of the current minute: a controller that takes the newest Job's
    scheduled time as the last run (pyctrl) and one that takes the CronJob's creation (upstream)
    then both see the next run at the next minute, never one missed before they started.
    """
    resource = BATCH_CRONJOBS if phase == "upstream" else PYCTRL_CRONJOBS
    start = time.monotonic()
    minute = int(time.time()) // 60

    def one(i: int) -> None:
        name = f"cj-{i:05d}"
        created = _retrying(lambda: client.create(resource, cronjob(name, tick), namespace))
        if i >= history:
            return
        owner = created if created is not None else client.get(resource, name, namespace)
        job = history_job(phase, owner, minute)
        _retrying(lambda: client.create(JOBS, job, namespace))
        status = finished_status(minute * 60 + 1)
        _retrying(lambda: client.patch(JOBS, job["metadata"]["name"], status, namespace,
                                       subresource="status"))

    with ThreadPoolExecutor(threads, thread_name_prefix="create") as pool:
        list(pool.map(one, range(n)))
    return time.monotonic() - start


def bench_client(cp: ControlPlane, threads: int) -> RESTClient:
    """The bench's client of ``cp`` for ``threads`` creating threads (module docstring)."""
    return RESTClient.from_kubeconfig(cp.kubeconfig_path, qps=5000, burst=5000,
                                      pool_maxsize=threads + 4, user_agent="pyctrl-bench")


def delete_all(cp: ControlPlane, namespace: str) -> None:
    """Delete every CronJob of both kinds and every Job in ``namespace`` (no GC is running).

    A collection of 10^4 objects can outlast the API server's 60 s request timeout (504,
    ``--delete-collection-workers`` is 1): the DELETE is repeated until it completes, so the
    next phase's controller never caches this phase's objects.
    """
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
    for path in (f"/apis/batch.pyctrl.io/v1/namespaces/{namespace}/cronjobs",
                 f"/apis/batch/v1/namespaces/{namespace}/cronjobs",
                 f"/apis/batch/v1/namespaces/{namespace}/jobs"):
        for _ in range(10):
            status, reply = cp.http.request("DELETE", path, body, timeout=300)
            if status < 500:
                break
        if status >= 300 and status != 404:
            print(f"cronjob-skew: cleanup of {path} failed: {status} {reply}", file=sys.stderr)
