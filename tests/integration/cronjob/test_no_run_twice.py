"""No run twice against a real API server: a Job deleted the moment it appears.

A watch in the test deletes every Job of the namespace on its ADDED event (as a Job that
finishes in milliseconds with ``ttlSecondsAfterFinished: 0`` would disappear), usually before
the controller's deferred status write records the run. Every Job create the controller makes
is counted from the same watch (ADDED events by name): each scheduled time must be created
exactly once per CronJob, across two ticks, and the status must record both runs.

The watch is read by one thread that deletes each Job before it reads the next event, so
under load it lags the apiserver by seconds: a recorded status does not mean the watch has
delivered that run's ADDED yet (counting then saw a created run as 0, issue 10). Counts are
therefore read only after :meth:`JobReaper.sync`: it creates a marker Job (owned by nothing,
so the controller ignores it) and waits for its ADDED; a namespace watch delivers events in
resourceVersion order, so by then every Job created before the marker has been counted.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from datetime import UTC, datetime

from cronjob_controller.jobs import job_name
from pyctrl import RESTClient
from pyctrl.errors import NotFound
from pyctrl.kube import JOBS
from tests.integration.cronjob.env import Env, wait_for

NAMES = [f"vanish-{i}" for i in range(4)]
MARKER = "reaper-sync-"  # marker Jobs' name prefix (no CronJob's run is named like this)


class JobReaper:
    """Counts ADDED Jobs by name and deletes each at once (see module docstring)."""

    def __init__(self, client: RESTClient, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.added: Counter[str] = Counter()
        self.errors: list[BaseException] = []
        self._mu = threading.Lock()
        self._syncs = 0
        rv = client.list(JOBS, namespace)["metadata"]["resourceVersion"]
        self.stream = client.watch(JOBS, namespace, resource_version=rv, timeout_seconds=300)
        self.thread = threading.Thread(target=self._run, name="job-reaper")
        self.thread.start()

    def _run(self) -> None:
        try:
            for event in self.stream:
                if event.get("type") != "ADDED":
                    continue
                meta = event["object"]["metadata"]
                with self._mu:
                    self.added[meta["name"]] += 1
                with contextlib.suppress(NotFound):
                    self.client.delete(JOBS, meta["name"], self.namespace,
                                       propagation_policy="Background",
                                       preconditions={"uid": meta["uid"]})
        except BaseException as err:  # surfaced by the test
            self.errors.append(err)

    def counts(self) -> Counter[str]:
        """ADDED events by Job name, marker Jobs left out (see :meth:`sync`)."""
        with self._mu:
            return Counter({n: c for n, c in self.added.items() if not n.startswith(MARKER)})

    def sync(self) -> None:
        """Return once every Job created before this call has been counted (module doc)."""
        self._syncs += 1
        marker = f"{MARKER}{self._syncs}"
        self.client.create(JOBS, {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": marker},
            "spec": {"suspend": True, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
        }, self.namespace)

        def seen() -> bool:
            assert not self.errors, self.errors
            with self._mu:
                return self.added[marker] > 0

        wait_for(seen, what=f"the reaper's watch to deliver {marker}")

    def stop(self) -> None:
        self.stream.close()
        self.thread.join(10)
        assert not self.thread.is_alive()


def _recorded(env: Env, name: str, when: datetime) -> bool:
    status = env.cronjob(name).get("status") or {}
    return bool(status.get("lastScheduleTime") == when.astimezone(UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ"))


def test_job_deleted_at_once_is_never_created_twice(env: Env) -> None:
    for name in NAMES:
        env.create_cronjob(name, "* * * * *")
    reaper = JobReaper(env.client, env.namespace)
    try:
        env.start()
        for _ in range(2):
            due = env.next_minute()
            runs = {job_name(name, due) for name in NAMES}

            def settled(due: datetime = due, runs: set[str] = runs) -> bool:
                assert not reaper.errors, reaper.errors
                counts = reaper.counts()
                if any(counts[r] > 1 for r in runs):
                    return True  # a second create: fail below with the counts
                return all(_recorded(env, name, due) for name in NAMES)

            wait_for(settled, timeout=20, what=f"runs at {due} recorded")
            reaper.sync()  # the status write can be ahead of the watch: count up to here
            counts = reaper.counts()
            assert {r: counts[r] for r in runs} == dict.fromkeys(runs, 1)
        assert not reaper.errors, reaper.errors
        # Nothing is left: every Job was deleted right after its create.
        wait_for(lambda: not env.job_names(), what="all jobs gone")
        reaper.sync()
        assert sum(reaper.counts().values()) == 2 * len(NAMES)
    finally:
        reaper.stop()
