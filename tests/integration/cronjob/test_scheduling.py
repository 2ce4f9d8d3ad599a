"""The CronJob controller against the real API server, with time moved by a FakeClock.

Tests about what happens once a Job really ends (Forbid waiting for a running pod, Replace
deleting a running Job, history limits after real completion) use the pods-mode control
plane (``pods_env``): the real Job controller creates pods, kube-scheduler binds them to
kwok's fake nodes and kwok ends them as their template says. Tests that need a Job to end at
an exact moment of the fake clock still write Job status by hand (``env.finish_job``).
"""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any

import pytest

from cronjob_controller.api import SCHEDULED_TIMESTAMP_ANNOTATION
from cronjob_controller.jobs import job_name
from pyctrl.kube import JOBS, PODS
from pyctrl.testing.envtest.pods import fake_run
from tests.integration.cronjob.env import Env, job_template, minute_floor, wait_for

pytestmark = pytest.mark.integration
# One xdist worker runs every test of the pods-mode control plane, so only one starts it.
pods = pytest.mark.xdist_group("pods")
# How long a Job's pod runs when a test needs it still running a few steps later: far longer
# than those steps take even on a loaded machine, short enough to wait for its end.
STILL_RUNNING = 20.0
# Waiting for a pod to run STILL_RUNNING seconds, plus the Job controller, on a loaded machine.
FINISH_TIMEOUT = STILL_RUNNING + 60.0


def pods_of(env: Env, job: str) -> list[dict[str, Any]]:
    items = env.client.list(PODS, env.namespace, label_selector=f"job-name={job}")["items"]
    return list(items)


def ran_on_kwok(env: Env, job: str) -> bool:
    """A pod of ``job`` is bound to a fake node and kwok has started it."""
    return any(str(p["spec"].get("nodeName", "")).startswith("kwok-node-")
               and (p.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed")
               for p in pods_of(env, job))


@pods
def test_job_goes_from_active_to_complete_on_kwok(pods_env: Env) -> None:
    env = pods_env
    env.create_cronjob("runs", run=fake_run(3))
    env.start()
    due = env.next_minute()
    name = job_name("runs", due)

    def active() -> list[str]:
        return [a["name"] for a in (env.cronjob("runs").get("status") or {}).get("active")
                or []]

    wait_for(lambda: active() == [name], what="the Job active in the CronJob's status")
    wait_for(lambda: ran_on_kwok(env, name), what="its pod running on a kwok node")
    wait_for(lambda: env.job_finished(name) == "Complete", FINISH_TIMEOUT, "Job Complete")
    # The controller sees the end of the run: no longer active, and the success recorded.
    completion = env.client.get(JOBS, name, env.namespace)["status"]["completionTime"]
    wait_for(lambda: active() == [] and (env.cronjob("runs").get("status") or {}).get(
        "lastSuccessfulTime") == completion, what="status: not active, lastSuccessfulTime")
    [pod] = pods_of(env, name)
    assert pod["status"]["phase"] == "Succeeded"


def test_creates_job_on_schedule_with_owner_labels_and_annotation(env: Env) -> None:
    env.create_cronjob("hello")
    env.start()
    due = env.next_minute()
    name = job_name("hello", due)
    wait_for(lambda: name in env.job_names("hello"), what=f"job {name}")
    job = env.client.get(JOBS, name, env.namespace)
    meta = job["metadata"]
    assert meta["labels"]["app"] == "hello"
    assert meta["annotations"]["team"] == "pyctrl"
    assert meta["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION] == due.strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    owner = meta["ownerReferences"][0]
    assert owner["kind"] == "CronJob" and owner["controller"] is True
    assert owner["blockOwnerDeletion"] is True
    assert owner["uid"] == env.cronjob("hello")["metadata"]["uid"]
    # Status follows from the world: the Job is active and lastScheduleTime is its time.
    wait_for(lambda: (env.cronjob("hello").get("status") or {}).get("lastScheduleTime")
             == due.strftime("%Y-%m-%dT%H:%M:%SZ"), what="lastScheduleTime")
    status = env.cronjob("hello")["status"]
    assert [a["name"] for a in status["active"]] == [name]
    assert status["nextScheduleTime"] == (due + timedelta(minutes=1)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    wait_for(lambda: env.events("SuccessfulCreate", "hello"), what="SuccessfulCreate event")


def test_no_duplicate_after_restart_or_with_two_replicas(env: Env) -> None:
    env.create_cronjob("twice")
    env.start()
    due = env.next_minute()
    wait_for(lambda: env.job_names("twice"), what="first job")
    env.stop()
    # A restarted controller at the same instant, and then two replicas at once, find the
    # run already done (deterministic names): still exactly one Job per scheduled time.
    env.start()
    env.start()
    due2 = env.next_minute()
    wait_for(lambda: len(env.job_names("twice")) >= 2, what="second job")
    env.step_to(env.clock.now() + timedelta(seconds=5))
    names = sorted(env.job_names("twice"))
    assert names == sorted([job_name("twice", due), job_name("twice", due2)])


@pods
def test_forbid_skips_run_while_job_active(pods_env: Env) -> None:
    env = pods_env
    env.create_cronjob("forbid", concurrencyPolicy="Forbid", run=fake_run(STILL_RUNNING))
    env.start()
    first = job_name("forbid", env.next_minute())
    wait_for(lambda: ran_on_kwok(env, first), what="first job's pod running")
    second = env.next_minute()
    wait_for(lambda: env.events("JobAlreadyActive", "forbid"), what="JobAlreadyActive")
    assert env.job_names("forbid") == {first}
    # Once its pod ends and the Job controller marks it Complete, the skipped run (no
    # deadline) starts.
    wait_for(lambda: env.job_finished(first) == "Complete", FINISH_TIMEOUT, "first Complete")
    wait_for(lambda: job_name("forbid", second) in env.job_names("forbid"),
             what="skipped run after completion")


@pods
def test_replace_deletes_active_job_first(pods_env: Env) -> None:
    env = pods_env
    env.create_cronjob("replace", concurrencyPolicy="Replace", run=fake_run(600))
    env.start()
    first = job_name("replace", env.next_minute())
    wait_for(lambda: ran_on_kwok(env, first), what="first job's pod running")
    second = env.next_minute()
    wait_for(lambda: env.job_names("replace") == {job_name("replace", second)},
             what="replacement")
    wait_for(lambda: env.events("SuccessfulDelete", "replace"), what="SuccessfulDelete event")
    # The running Job went with its pod (background deletion: the garbage collector, then
    # kwok in the kubelet's place), and the replacement runs.
    wait_for(lambda: pods_of(env, first) == [], what="the replaced Job's pod gone")
    wait_for(lambda: ran_on_kwok(env, job_name("replace", second)), what="replacement runs")


@pods
def test_history_limits_keep_newest_finished_jobs(pods_env: Env) -> None:
    env = pods_env
    env.create_cronjob("hist", successfulJobsHistoryLimit=1, failedJobsHistoryLimit=1,
                       run=fake_run(0))
    env.start()

    def run(outcome: str) -> str:
        name = job_name("hist", env.next_minute())
        wait_for(env.has_job("hist", name), what=name)
        wait_for(functools.partial(env.job_finished, name), FINISH_TIMEOUT, f"{name} finished")
        assert env.job_finished(name) == outcome
        return name

    made = [run("Complete"), run("Complete")]
    patched = env.patch_spec("hist", jobTemplate=job_template("hist", fake_run(0, fail=True)))
    gen = patched["metadata"]["generation"]
    # The next Job comes from the controller's cache: wait until it has seen the patch.
    wait_for(lambda: (env.cronjob("hist").get("status") or {}).get("observedGeneration")
             == gen, what="failing template observed")
    made += [run("Failed"), run("Failed")]
    env.next_minute()
    wait_for(lambda: made[0] not in env.job_names("hist")
             and made[2] not in env.job_names("hist"), what="history cleanup")
    names = env.job_names("hist")
    assert made[1] in names and made[3] in names


def test_suspend_and_resume(env: Env) -> None:
    env.create_cronjob("sus", suspend=True)
    env.start()
    env.next_minute()
    env.step_to(env.clock.now() + timedelta(seconds=3))
    wait_for(lambda: (env.condition("sus") or {}).get("reason") == "Suspended",
             what="Suspended condition")
    assert env.job_names("sus") == set()
    env.patch_spec("sus", suspend=False)
    # No deadline: the most recent missed run starts on resume, then runs continue.
    wait_for(lambda: env.job_names("sus"), what="run after resume")
    due = env.next_minute()
    wait_for(lambda: job_name("sus", due) in env.job_names("sus"), what="next run")


def test_starting_deadline_misses_late_run(env: Env) -> None:
    env.create_cronjob("late", startingDeadlineSeconds=10)
    # The anchor is one minute back; the controller first runs 30 s after the due time.
    base = minute_floor(env.clock.now())
    env.seed_last_schedule("late", base - timedelta(minutes=1))
    env.step_to(base + timedelta(minutes=1, seconds=30))
    env.start()
    wait_for(lambda: env.events("MissSchedule", "late"), what="MissSchedule")
    assert env.job_names("late") == set()
    due = env.next_minute()
    wait_for(lambda: job_name("late", due) in env.job_names("late"), what="on-time run")


def test_too_many_missed_times_still_starts_latest(env: Env) -> None:
    env.create_cronjob("many")
    base = minute_floor(env.clock.now())
    env.seed_last_schedule("many", base - timedelta(minutes=300))
    env.step_to(base + timedelta(seconds=2))
    env.start()
    wait_for(lambda: env.events("TooManyMissedTimes", "many"), what="TooManyMissedTimes")
    wait_for(lambda: env.job_names("many") == {job_name("many", base)}, what="latest run")
