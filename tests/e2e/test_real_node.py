"""The deployed controller on a real node: Jobs run real containers (make e2e; issue 34).

Against `make cluster && make image && make deploy OVERLAY=manifests/base` (tests/e2e/
conftest.py). Every scenario is one a fake node (kwok) cannot show: a container that really
exits 1 and is retried per backoffLimit, the sample's container printing its line, the
leader pod deleted just before a tick with every scheduled time getting exactly one Job,
concurrencyPolicy Forbid and Replace meeting a container that is still running, a Job whose
container runs through a kubelet restart (hack/cluster/restart.sh), and a `kubectl set image`
rolling upgrade across ticks (to a second tag of the same build: the mechanism, not a change
of code) with every scheduled time getting exactly one Job, and the leader's container
OOM-killed: its memory limit lowered in place (the pod "resize" subresource; the standby keeps
the Deployment's) and suspended CronJobs carrying large annotations created until the kernel
kills it for what its informer cache holds, the lease moving to the standby, one Job per
scheduled time of three every-minute CronJobs across the kill. On an overlay with the webhook
(after hack/cluster/cert_manager.sh) the webhook refuses an invalid schedule with a
certificate cert-manager issued.

Tests that read a container's memory use the host's cgroup files: they run on the node's host.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.e2e.conftest import KUBECONFIG, ROOT, Kubectl
from tests.waiting import eventually, pause

pytestmark = [pytest.mark.node, pytest.mark.timeout(600)]

T = TypeVar("T")
SYSTEM_NS = "pyctrl-system"
SCHEDULED = "batch.pyctrl.io/scheduled-timestamp"


def _until(what: str, timeout: float, probe: Callable[[], T | None]) -> T:
    value = eventually(probe, timeout, what, interval=1.0)
    assert value is not None
    return value


def _cronjob(name: str, command: str, backoff_limit: int = 0, keep: int = 10) -> dict[str, Any]:
    return {
        "apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob", "metadata": {"name": name},
        "spec": {
            "schedule": "* * * * *", "concurrencyPolicy": "Allow",
            "successfulJobsHistoryLimit": keep, "failedJobsHistoryLimit": keep,
            "jobTemplate": {"spec": {"backoffLimit": backoff_limit, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox:1.36",
                                "imagePullPolicy": "IfNotPresent",
                                "command": ["sh", "-c", command]}]}}}},
        },
    }


def _jobs(kubectl: Kubectl, namespace: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = kubectl.json("-n", namespace, "get", "jobs")["items"]
    return items


def _condition(job: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for c in job.get("status", {}).get("conditions") or []:
        if c["type"] == kind and c["status"] == "True":
            return dict(c)
    return None


def test_the_controller_runs_as_the_deployed_pod_and_leads(kubectl: Kubectl) -> None:
    deploy = kubectl.json("-n", SYSTEM_NS, "get", "deployment", "cronjob-controller")
    assert deploy["status"].get("readyReplicas") == deploy["spec"]["replicas"]
    pods = {p["metadata"]["name"] for p in kubectl.json(
        "-n", SYSTEM_NS, "get", "pods", "-l", "app.kubernetes.io/name=cronjob-controller")["items"]}
    holder = _leader(kubectl)
    assert holder in pods


def _leader(kubectl: Kubectl) -> str:
    lease = kubectl.json("-n", SYSTEM_NS, "get", "lease", "pyctrl-cronjob-controller")
    holder: str = lease["spec"]["holderIdentity"]
    return holder.split("_", maxsplit=1)[0]


def test_the_webhook_rejects_an_invalid_schedule_with_a_cert_manager_certificate(
        kubectl: Kubectl, namespace: str) -> None:
    """With an overlay that has the webhook (manifests/default, after
    hack/cluster/cert_manager.sh): cert-manager issued the serving certificate, its CA
    injector put the CA into the webhook configuration, and the apiserver reaches the
    deployed webhook, which refuses a schedule the CRD schema admits."""
    hooks = kubectl.json("get", "validatingwebhookconfigurations")["items"]
    hook = next((h for h in hooks if h["metadata"]["name"] == "pyctrl-cronjob-controller"), None)
    if hook is None:
        pytest.skip("the deployed overlay has no webhook (make deploy OVERLAY=manifests/default)")
    cert = kubectl.json("-n", SYSTEM_NS, "get", "certificates.cert-manager.io",
                        "cronjob-controller-webhook")
    assert _condition(cert, "Ready"), f"no cert-manager issued it: {cert.get('status')}"
    assert all(w["clientConfig"].get("caBundle") for w in hook["webhooks"])
    bad = _cronjob("bad", "true")
    bad["spec"]["schedule"] = "61 * * * *"
    done = subprocess.run([kubectl.binary, f"--kubeconfig={kubectl.kubeconfig}", "-n",
                           namespace, "apply", "-f", "-"], input=json.dumps(bad),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0 and "61 is above the maximum 59" in done.stderr, done.stderr


def test_a_failing_container_is_retried_per_backoff_limit(kubectl: Kubectl,
                                                         namespace: str) -> None:
    kubectl.apply(namespace, _cronjob("fails", "echo failing; exit 1", backoff_limit=2))
    job = _until("a Job failed with BackoffLimitExceeded", 240, lambda: next(
        (j for j in _jobs(kubectl, namespace) if _condition(j, "Failed")), None))
    assert _condition(job, "Failed")["reason"] == "BackoffLimitExceeded"  # type: ignore[index]
    pods = kubectl.json("-n", namespace, "get", "pods", "-l",
                        f"job-name={job['metadata']['name']}")["items"]
    # backoffLimit 2: the first run and two retries, each a real container that exited 1.
    assert len(pods) == 3
    for pod in pods:
        state = pod["status"]["containerStatuses"][0]["state"]
        assert state["terminated"]["exitCode"] == 1
    log = kubectl("-n", namespace, "logs", pods[0]["metadata"]["name"])
    assert log.strip() == "failing"


def test_the_sample_cronjob_runs_a_real_container(kubectl: Kubectl, namespace: str) -> None:
    kubectl("-n", namespace, "apply", "-f", str(ROOT / "manifests/samples/cronjob.yaml"))
    job = _until("the sample's Job Complete", 150, lambda: next(
        (j for j in _jobs(kubectl, namespace) if _condition(j, "Complete")), None))
    pods = kubectl.json("-n", namespace, "get", "pods", "-l",
                        f"job-name={job['metadata']['name']}")["items"]
    assert [p["status"]["phase"] for p in pods] == ["Succeeded"]
    assert "Hello from a pyctrl CronJob" in kubectl(
        "-n", namespace, "logs", pods[0]["metadata"]["name"])


def test_the_leader_deleted_before_a_tick_loses_and_doubles_no_run(kubectl: Kubectl,
                                                                   namespace: str) -> None:
    kubectl.apply(namespace, _cronjob("ticks", "echo tick"))
    _until("the first Job", 150, lambda: _jobs(kubectl, namespace))
    # Delete the leader 3 s before the next minute: the tick falls in the hand-over.
    now = time.time()
    pause(60 - now % 60 - 3)
    first_missing = datetime.fromtimestamp(time.time() + 3, UTC).replace(second=0, microsecond=0)
    old = _leader(kubectl)
    kubectl("-n", SYSTEM_NS, "delete", "pod", old, "--wait=false")
    _until("a new leader", 120, lambda: _leader(kubectl) != old)
    # Two more ticks after the hand-over.
    pause(60 - time.time() % 60 + 60 + 15)
    kubectl("-n", SYSTEM_NS, "rollout", "status", "deployment/cronjob-controller",
            "--timeout=120s")
    jobs = _jobs(kubectl, namespace)
    minutes = _one_job_per_minute(jobs)
    assert first_missing in minutes, f"the tick during the hand-over is missing: {minutes}"
    assert minutes[-1] > first_missing
    print(f"leader {old} deleted before {first_missing:%H:%M}: {len(jobs)} Jobs for "
          f"{len(minutes)} scheduled times {minutes[0]:%H:%M}..{minutes[-1]:%H:%M}, "
          f"0 duplicate, 0 missed")


def _minute(t: float) -> datetime:
    """The scheduled minute at or before the Unix time ``t``."""
    return datetime.fromtimestamp(t - t % 60, UTC)


def _one_job_per_minute(jobs: list[dict[str, Any]]) -> list[datetime]:
    times = Counter(j["metadata"]["annotations"][SCHEDULED] for j in jobs)
    assert all(n == 1 for n in times.values()), f"duplicate runs: {times}"
    minutes = sorted(datetime.fromisoformat(t).astimezone(UTC) for t in times)
    expected = [minutes[0]]
    while expected[-1] < minutes[-1]:
        expected.append(datetime.fromtimestamp(expected[-1].timestamp() + 60, UTC))
    assert minutes == expected, f"missed runs: {sorted(times)}"
    return minutes


def test_forbid_and_replace_with_containers_that_really_run(kubectl: Kubectl,
                                                            namespace: str) -> None:
    for policy in ("Forbid", "Replace"):
        cronjob = _cronjob(policy.lower(), "sleep 100")
        cronjob["spec"]["concurrencyPolicy"] = policy
        kubectl.apply(namespace, cronjob)

    def running(owner: str) -> dict[str, Any] | None:
        return next((j for j in _jobs(kubectl, namespace)
                     if j["metadata"]["name"].startswith(owner + "-")
                     and j.get("status", {}).get("ready") == 1), None)

    first = {owner: _until(f"{owner}'s first Job running", 150, partial(running, owner))
             for owner in ("forbid", "replace")}
    first_time = first["forbid"]["metadata"]["annotations"][SCHEDULED]
    assert first["replace"]["metadata"]["annotations"][SCHEDULED] == first_time
    # The next tick comes while both first containers still sleep (100 s).
    tick = datetime.fromisoformat(first_time).timestamp() + 60
    pause(max(0.0, tick - time.time()) + 20)
    names = {j["metadata"]["name"]: j for j in _jobs(kubectl, namespace)
             if not j["metadata"].get("deletionTimestamp")}
    forbid = sorted(n for n in names if n.startswith("forbid-"))
    replace = sorted(n for n in names if n.startswith("replace-"))
    # Forbid: the tick is skipped while the first Job runs.
    assert forbid == [first["forbid"]["metadata"]["name"]]
    # Replace: the running Job is deleted and the tick's Job runs instead.
    assert len(replace) == 1 and replace[0] != first["replace"]["metadata"]["name"]
    print(f"at {first_time} + 80 s: Forbid {forbid}, Replace {replace}")


def test_a_job_runs_to_completion_across_a_kubelet_restart(kubectl: Kubectl,
                                                          namespace: str) -> None:
    kubectl.apply(namespace, _cronjob("across", "sleep 30; echo done"))

    def running() -> dict[str, Any] | None:
        return next((j for j in _jobs(kubectl, namespace)
                     if j.get("status", {}).get("ready") == 1), None)

    job = _until("a Job running", 150, running)
    subprocess.run(["bash", str(ROOT / "hack/cluster/restart.sh"), "kubelet"], check=True,
                   capture_output=True, timeout=60)
    name = job["metadata"]["name"]
    done = _until("the Job Complete after the kubelet restart", 120, lambda: next(
        (j for j in _jobs(kubectl, namespace)
         if j["metadata"]["name"] == name and _condition(j, "Complete")), None))
    pods = kubectl.json("-n", namespace, "get", "pods", "-l", f"job-name={name}")["items"]
    # The same container ran through: no second pod, no container restart.
    assert len(pods) == 1 and pods[0]["status"]["containerStatuses"][0]["restartCount"] == 0
    assert kubectl("-n", namespace, "logs", pods[0]["metadata"]["name"]).strip() == "done"
    assert _condition(done, "Complete")
    node = kubectl.json("get", "node", "pyctrl-node")
    assert _condition(node, "Ready")


def test_a_rolling_upgrade_across_ticks_loses_and_doubles_no_run(kubectl: Kubectl,
                                                                 namespace: str) -> None:
    state = Path(KUBECONFIG).parent
    current = kubectl.json("-n", SYSTEM_NS, "get", "deployment", "cronjob-controller")
    image = current["spec"]["template"]["spec"]["containers"][0]["image"]
    subprocess.run(["ctr", "--address", str(state / "run/containerd/containerd.sock"),
                    "-n", "k8s.io", "images", "tag", "--force", f"docker.io/{image}",
                    "docker.io/pyctrl/cronjob-controller:e2e-next"],
                   check=True, capture_output=True)
    kubectl.apply(namespace, _cronjob("upgrade", "echo tick"))
    _until("the first Job", 150, lambda: _jobs(kubectl, namespace))
    pause(60 - time.time() % 60 - 5)  # the rollout starts 5 s before a tick
    started = time.time()
    try:
        kubectl("-n", SYSTEM_NS, "set", "image", "deployment/cronjob-controller",
                "controller=pyctrl/cronjob-controller:e2e-next")
        kubectl("-n", SYSTEM_NS, "rollout", "status", "deployment/cronjob-controller",
                "--timeout=180s")
        rolled = time.time() - started
        pause(60 - time.time() % 60 + 60 + 15)  # two more ticks on the new pods
        pods = kubectl.json("-n", SYSTEM_NS, "get", "pods", "-l",
                            "app.kubernetes.io/name=cronjob-controller")["items"]
        assert {p["spec"]["containers"][0]["image"] for p in pods} == {
            "pyctrl/cronjob-controller:e2e-next"}
        minutes = _one_job_per_minute(_jobs(kubectl, namespace))
        last_tick = _minute(time.time())
        assert minutes[-1] == last_tick, (
            f"the last tick {last_tick:%H:%M:%S} has no Job (rollout took {rolled:.0f} s): "
            f"{[f'{m:%H:%M}' for m in minutes]}")
        print(f"rollout in {rolled:.0f} s from {image}: {len(minutes)} scheduled times "
              f"{minutes[0]:%H:%M}..{minutes[-1]:%H:%M}, one Job each")
    finally:
        kubectl("-n", SYSTEM_NS, "set", "image", "deployment/cronjob-controller",
                f"controller={image}")
        kubectl("-n", SYSTEM_NS, "rollout", "status", "deployment/cronjob-controller",
                "--timeout=180s")


def _pods(kubectl: Kubectl) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = kubectl.json(
        "-n", SYSTEM_NS, "get", "pods", "-l", "app.kubernetes.io/name=cronjob-controller")["items"]
    return items


def _oom_killed(kubectl: Kubectl, restarts: dict[str, int]) -> tuple[str, str] | None:
    """(pod, finishedAt) of a controller container OOM-killed since ``restarts`` was taken."""
    for pod in _pods(kubectl):
        for status in pod["status"].get("containerStatuses") or []:
            last = status.get("lastState", {}).get("terminated") or {}
            if (status["restartCount"] > restarts.get(pod["metadata"]["name"], 0)
                    and last.get("reason") == "OOMKilled"):
                assert last["exitCode"] == 137, last
                return pod["metadata"]["name"], str(last["finishedAt"])
    return None


def _ballast(namespace: str, first: int, count: int, size: int) -> dict[str, Any]:
    """``count`` suspended CronJobs, each carrying a ``size``-byte annotation: objects the
    controller must cache (it watches every CronJob) and never runs."""
    items = [{"apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
              "metadata": {"name": f"ballast-{i}", "namespace": namespace,
                           "annotations": {"e2e.pyctrl.io/ballast": "x" * size}},
              "spec": {"schedule": "0 0 1 1 *", "suspend": True, "jobTemplate": {"spec": {
                  "template": {"spec": {"restartPolicy": "Never", "containers": [
                      {"name": "c", "image": "busybox:1.36"}]}}}}}}
             for i in range(first, first + count)]
    return {"apiVersion": "v1", "kind": "List", "items": items}


# The memory limit the OOM scenario gives the leader's container, in place (the pod "resize"
# subresource): an idle controller's container uses about 35 MB here and the leader's grows by
# ~2.5 bytes per byte of cached CronJob, so it crosses this at ~25 MB of ballast. The standby
# keeps the Deployment's 512Mi: it takes the lease and survives what killed the leader.
OOM_LIMIT = "96Mi"


def _container_cgroup(kubectl: Kubectl, pod: str) -> Path:
    """The host's cgroup directory of ``pod``'s controller container (v1 or v2)."""
    status = kubectl.json("-n", SYSTEM_NS, "get", "pod", pod)["status"]
    cid = status["containerStatuses"][0]["containerID"].split("://", 1)[1]
    found = [*Path("/sys/fs/cgroup").glob(f"memory/kubepods*/**/{cid}"),
             *Path("/sys/fs/cgroup").glob(f"kubepods*/**/{cid}")]
    assert found, f"no cgroup of container {cid} under /sys/fs/cgroup"
    return found[0]


def _memory_usage(kubectl: Kubectl, pod: str) -> int:
    """The container's anonymous memory (its processes' heap; page cache left out)."""
    stat = dict(line.split() for line in
                (_container_cgroup(kubectl, pod) / "memory.stat").read_text().splitlines())
    return int(stat.get("total_rss", stat.get("anon", "0")))


def _memory_limit(kubectl: Kubectl, pod: str) -> int:
    cgroup = _container_cgroup(kubectl, pod)
    v1 = cgroup / "memory.limit_in_bytes"
    return int((v1 if v1.exists() else cgroup / "memory.max").read_text())


def _resize(kubectl: Kubectl, pod: str, resources: dict[str, Any]) -> None:
    kubectl("-n", SYSTEM_NS, "patch", "pod", pod, "--subresource", "resize", "--patch",
            json.dumps({"spec": {"containers": [{"name": "controller",
                                                 "resources": resources}]}}))

    def applied() -> bool:
        status = kubectl.json("-n", SYSTEM_NS, "get", "pod", pod)["status"]
        return bool(status["containerStatuses"][0].get("resources", {}).get("limits", {})
                    .get("memory") == resources["limits"]["memory"])

    _until(f"{pod} resized to {resources['limits']['memory']}", 60, applied)


@pytest.mark.timeout(900)
def test_the_leader_oom_killed_loses_and_doubles_no_run(kubectl: Kubectl, namespace: str) -> None:
    """The leader's container really exceeds its memory limit (its informer cache holds
    CronJobs added until the kernel kills it), the kubelet restarts it, the lease moves to the
    standby, and three every-minute CronJobs get exactly one Job per scheduled time across the
    kill."""
    # Fresh controller processes: what earlier tests made them cache (and Python keeps) must
    # not decide how much ballast the kill takes.
    kubectl("-n", SYSTEM_NS, "rollout", "restart", "deployment/cronjob-controller")
    kubectl("-n", SYSTEM_NS, "rollout", "status", "deployment/cronjob-controller",
            "--timeout=180s")
    pods = {p["metadata"]["name"] for p in _pods(kubectl)
            if "deletionTimestamp" not in p["metadata"]}
    _until("a leader among the new pods", 60, lambda: _leader(kubectl) in pods)
    owners = ("tick-a", "tick-b", "tick-c")
    for owner in owners:
        kubectl.apply(namespace, _cronjob(owner, "echo tick"))
    _until("a first Job of each CronJob", 150, lambda: {
        j["metadata"]["name"].rsplit("-", 1)[0] for j in _jobs(kubectl, namespace)
    } >= set(owners))
    lease = kubectl.json("-n", SYSTEM_NS, "get", "lease", "pyctrl-cronjob-controller")
    old_holder: str = lease["spec"]["holderIdentity"]
    leader = old_holder.split("_", maxsplit=1)[0]
    pod = kubectl.json("-n", SYSTEM_NS, "get", "pod", leader)
    resources = pod["spec"]["containers"][0]["resources"]
    restarts = {p["metadata"]["name"]: p["status"]["containerStatuses"][0]["restartCount"]
                for p in _pods(kubectl)}
    ballast_ns = f"{namespace}-ballast"
    kubectl("create", "namespace", ballast_ns)
    _resize(kubectl, leader, {"requests": {**resources["requests"], "memory": "64Mi"},
                              "limits": {**resources["limits"], "memory": OOM_LIMIT}})
    try:
        # Ballast goes in 10 CronJobs (2.4 MB) at a time until the leader's container is within
        # ~12 MiB of its limit, then from 12 s before a tick 2 at a time until it is killed: the
        # kill lands just before the tick, which falls in the lease hand-over.
        added, killed = 0, None

        def add(count: int) -> tuple[str, str] | None:
            nonlocal added
            # check=False: with the webhook (failurePolicy Fail), a create just after the kill
            # can reach the dead pod's endpoint before its readiness drops it (refused).
            kubectl("create", "-f", "-", input=json.dumps(_ballast(ballast_ns, added, count,
                                                                   240_000)), check=False)
            added += count
            return _oom_killed(kubectl, restarts)

        limit = _memory_limit(kubectl, leader)
        assert limit == int(OOM_LIMIT.removesuffix("Mi")) * 2**20, "the resize is not in effect"
        while killed is None and _memory_usage(kubectl, leader) < limit - 12 * 2**20:
            killed = add(10)
        near = added
        if killed is None:
            pause((60 - time.time() % 60 - 12) % 60)
        while killed is None and added < near + 100:
            killed = add(2)
        if killed is None:
            killed = _until("a controller container OOMKilled", 60,
                            partial(_oom_killed, kubectl, restarts))
        # The cause goes away, as an operator's fix would remove it: until then the restarted
        # container is killed again while it lists the same objects (and backs off).
        kubectl("-n", ballast_ns, "delete", "cronjobs.batch.pyctrl.io", "--all", "--wait=false")
        victim, finished = killed
        assert victim == leader, f"{victim} was OOM-killed, not the leader {leader}"

        def moved() -> dict[str, Any] | None:
            spec: dict[str, Any] = kubectl.json(
                "-n", SYSTEM_NS, "get", "lease", "pyctrl-cronjob-controller")["spec"]
            return spec if spec["holderIdentity"] != old_holder else None

        lease = _until("the lease taken by a new holder", 120, moved)
        kill = datetime.fromisoformat(finished).astimezone(UTC)
        # Two more ticks after the kill.
        pause(60 - time.time() % 60 + 60 + 15)
        last_tick = _minute(time.time())
        next_tick = datetime.fromtimestamp(kill.timestamp() - kill.timestamp() % 60 + 60, UTC)
        jobs = _jobs(kubectl, namespace)
        for owner in owners:
            minutes = _one_job_per_minute([j for j in jobs if
                                           j["metadata"]["name"].rsplit("-", 1)[0] == owner])
            assert minutes[0] < kill and next_tick in minutes and minutes[-1] == last_tick, (
                f"{owner}: kill at {kill:%H:%M:%S}, Jobs for {[f'{m:%H:%M}' for m in minutes]}")
        # The OOM-killed container was restarted in its pod and is Ready again.
        _until(f"{leader} Ready again", 180, lambda: _condition(
            kubectl.json("-n", SYSTEM_NS, "get", "pod", leader), "Ready"))
        acquired = datetime.fromisoformat(lease["acquireTime"]).astimezone(UTC)
        print(f"{leader} OOM-killed ({OOM_LIMIT}, {added} ballast CronJobs of 240 kB, {near} "
              f"before the tick) at {kill:%H:%M:%S}; lease {old_holder} -> "
              f"{lease['holderIdentity']} at {acquired:%H:%M:%S} (tick {next_tick:%H:%M:%S} "
              f"{'inside' if kill < next_tick < acquired else 'outside'} the hand-over); "
              f"{len(owners)} CronJobs, one Job per scheduled time "
              f"{minutes[0]:%H:%M}..{last_tick:%H:%M}, 0 duplicate, 0 missed")
    finally:
        kubectl("delete", "namespace", ballast_ns, "--wait=false", check=False)
        # Resizing back up is not enough: on cgroup v1 the kubelet leaves the pod's own cgroup
        # at the low limit. The Deployment replaces the pod with one of its template.
        kubectl("-n", SYSTEM_NS, "delete", "pod", leader)
        kubectl("-n", SYSTEM_NS, "rollout", "status", "deployment/cronjob-controller",
                "--timeout=180s")
