"""A CronJob controller running in-process against the real control plane, on a FakeClock.

The controller is wired exactly as ``python -m cronjob_controller`` wires it
(:func:`cronjob_controller.wiring.build` on a :class:`pyctrl.Manager`), but its clock is a
:class:`pyctrl.testing.FakeClock` so a test moves time to the next minute instead of waiting.
The API server's own timestamps (creationTimestamp) stay real; tests that need a past anchor
seed ``status.lastScheduleTime`` through the status subresource.

By default the Jobs are created suspended and a test finishes them by writing Job status
(:meth:`Env.finish_job`): exact timing, nothing else touches them. On the pods-mode control
plane (the ``pods_env`` fixture) ``create_cronjob(..., run=fake_run(seconds, fail=...))``
makes unsuspended Jobs whose pods kwok runs for real time and ends as told, and the real Job
controller sets their status (:meth:`Env.job_finished` waits for it).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from cronjob_controller.api import CRONJOBS
from cronjob_controller.wiring import CronJobController, build
from pyctrl import Manager, ManagerOptions, RESTClient, controller_of
from pyctrl.errors import NotFound
from pyctrl.kube import EVENTS, JOBS
from pyctrl.testing import FakeClock
from pyctrl.testing.envtest.pods import PodMetadata
from tests.threads import Runner, start_manager
from tests.waiting import eventually

Obj = dict[str, Any]


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    """Poll ``predicate`` (real time; the API server is real) until truthy or fail.

    The default timeout only bounds how long a failing test takes: it is far above what a
    passing wait needs on a quiet machine, since the suite runs on parallel workers of a
    shared 2-core machine (20 s was once too short for a controller's first sync there)."""
    return eventually(predicate, timeout, what, interval=0.05)


def minute_floor(t: datetime) -> datetime:
    return t.replace(second=0, microsecond=0)


def job_template(name: str, run: PodMetadata | None = None) -> Obj:
    """A CronJob's jobTemplate: suspended (no pods ever) unless ``run`` says how its pods
    run on kwok; then no retries, so a failing pod fails the Job at once."""
    spec: Obj = {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}
    if run is None:
        spec["suspend"] = True
    else:
        spec["backoffLimit"] = 0
        spec["template"]["metadata"] = {"labels": dict(run["labels"]),
                                        "annotations": dict(run["annotations"])}
    return {"metadata": {"labels": {"app": name}, "annotations": {"team": "pyctrl"}},
            "spec": spec}


def cronjob_body(name: str, schedule: str = "* * * * *", *, run: PodMetadata | None = None,
                 **spec: Any) -> Obj:
    return {
        "apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": schedule, "jobTemplate": job_template(name, run), **spec},
    }


def break_template(body: Obj, breakage: str) -> None:
    """Make ``body``'s (a CronJob's) pod template one the CRD schema admits and the Job API
    refuses, in place: ``no-restart-policy``, ``empty-image`` or ``bad-container-name``."""
    pod = body["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    if breakage == "no-restart-policy":
        del pod["restartPolicy"]
    elif breakage == "empty-image":
        pod["containers"][0]["image"] = ""
    elif breakage == "bad-container-name":
        pod["containers"][0]["name"] = "Bad_Name"
    else:
        raise ValueError(f"unknown breakage {breakage!r}")


class Env:
    """One running controller (or several, see :meth:`start`) for one test namespace."""

    def __init__(self, client: RESTClient, namespace: str, clock: FakeClock) -> None:
        self.client = client
        self.namespace = namespace
        self.clock = clock
        self._runs: list[tuple[Runner, CronJobController]] = []
        self.errors: list[BaseException] = []

    # -- controllers -----------------------------------------------------------------------
    def start(self, workers: int = 4, client: RESTClient | None = None) -> CronJobController:
        """Start a controller (no leader election: its deadlines need real time)."""
        manager = Manager(client or self.client,
                          ManagerOptions(graceful_shutdown_timeout=10,
                                         component="cronjob-controller"),
                          clock=self.clock)
        wired = build(manager, namespaces=[self.namespace], workers=workers)
        runner = start_manager(manager, name=f"manager-{len(self._runs)}", join_timeout=30)
        self._runs.append((runner, wired))
        wait_for(lambda: all(i.has_synced() for i in [*wired.cronjob_informers,
                                                      *wired.job_informers]),
                 what="informers synced")
        return wired

    def stop(self, index: int = -1) -> None:
        runner, _ = self._runs.pop(index)
        runner.stop_and_join()
        if runner.error is not None:  # surfaced by stop_all
            self.errors.append(runner.error)

    def stop_all(self) -> None:
        while self._runs:
            self.stop()
        assert not self.errors, self.errors

    # -- time ------------------------------------------------------------------------------
    def step_to(self, when: datetime) -> None:
        """Move the fake clock forward to ``when`` (never backwards)."""
        delta = (when - self.clock.now()).total_seconds()
        if delta > 0:
            self.clock.step(delta)

    def next_minute(self, plus: float = 1.0) -> datetime:
        """Step to one second past the next minute boundary; returns that boundary."""
        boundary = minute_floor(self.clock.now()) + timedelta(minutes=1)
        self.step_to(boundary + timedelta(seconds=plus))
        return boundary

    # -- objects ---------------------------------------------------------------------------
    def create_cronjob(self, name: str, schedule: str = "* * * * *",
                       *, run: PodMetadata | None = None, **spec: Any) -> Obj:
        return self.client.create(CRONJOBS, cronjob_body(name, schedule, run=run, **spec),
                                  self.namespace)

    def cronjob(self, name: str) -> Obj:
        return self.client.get(CRONJOBS, name, self.namespace)

    def patch_spec(self, name: str, **spec: Any) -> Obj:
        return self.client.patch(CRONJOBS, name, {"spec": spec}, self.namespace)

    def seed_last_schedule(self, name: str, when: datetime) -> None:
        self.client.patch(CRONJOBS, name, {"status": {"lastScheduleTime": _fmt(when)}},
                          self.namespace, subresource="status")

    def jobs(self, owner: str | None = None) -> list[Obj]:
        items = self.client.list(JOBS, self.namespace)["items"]
        if owner is None:
            return list(items)
        return [j for j in items if (controller_of(j) or {}).get("name") == owner]

    def has_job(self, owner: str, name: str) -> Callable[[], bool]:
        """A predicate for :func:`wait_for`: the Job ``name`` owned by ``owner`` exists."""
        return lambda: name in self.job_names(owner)

    def job_names(self, owner: str | None = None) -> set[str]:
        return {j["metadata"]["name"] for j in self.jobs(owner)}

    def job_finished(self, name: str) -> str | None:
        """"Complete" or "Failed" once the Job has that condition (None before, or gone)."""
        try:
            job = self.client.get(JOBS, name, self.namespace)
        except NotFound:
            return None
        for cond in (job.get("status") or {}).get("conditions") or []:
            if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
                return str(cond["type"])
        return None

    def finish_job(self, name: str, condition: str = "Complete") -> None:
        """Mark a Job finished through its status subresource (there is no kubelet)."""
        now = _fmt(datetime.now(UTC))
        status: Obj = {"startTime": now, "conditions": [
            {"type": "SuccessCriteriaMet" if condition == "Complete" else "FailureTarget",
             "status": "True", "lastTransitionTime": now},
            {"type": condition, "status": "True", "lastTransitionTime": now}]}
        if condition == "Complete":
            status["completionTime"] = now
            status["succeeded"] = 1
        else:
            status["failed"] = 1
        self.client.patch(JOBS, name, {"status": status}, self.namespace,
                          subresource="status")

    def events(self, reason: str | None = None, involved: str | None = None) -> list[Obj]:
        items = self.client.list(EVENTS, self.namespace)["items"]
        return [e for e in items
                if (reason is None or e.get("reason") == reason)
                and (involved is None or e["involvedObject"].get("name") == involved)]

    def condition(self, name: str, ctype: str = "Ready") -> Obj | None:
        try:
            conds = (self.cronjob(name).get("status") or {}).get("conditions") or []
        except NotFound:
            return None
        return next((c for c in conds if c.get("type") == ctype), None)


def _fmt(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
