"""The controller works with exactly the RBAC that manifests/base grants its ServiceAccount.

The test binds manifests/base/rbac.yaml to the ServiceAccount from
manifests/base/serviceaccount.yaml, gets a token for it through the TokenRequest API, and runs
the controller with that token (leader election included); the core scenarios pass and
requests outside the role are refused.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cronjob_controller.api import CRONJOBS, CronJob
from cronjob_controller.jobs import job_name
from cronjob_controller.templatecheck import dry_run_job
from pyctrl import (
    LeaderCallbacks,
    LeaderElectionOptions,
    LeaderElector,
    LeaseLock,
    RESTClient,
)
from pyctrl.api import decode
from pyctrl.errors import Forbidden
from pyctrl.kube import JOBS, LEASES, SECRETS
from pyctrl.testing.envtest import ControlPlane
from tests.integration.cronjob.env import Env, cronjob_body, wait_for
from tests.threads import running

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
SYSTEM_NS = "pyctrl-system"


@pytest.fixture
def sa_client(control_plane: ControlPlane, tmp_path: Path) -> Iterator[RESTClient]:
    if control_plane.external:
        pytest.skip("writes a token kubeconfig for an envtest control plane")
    for name in ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml"):
        control_plane.kubectl("apply", "-f", str(ROOT / "manifests" / "base" / name))
    token = control_plane.kubectl("create", "token", "cronjob-controller", "-n", SYSTEM_NS,
                                  "--duration=1h").stdout.strip()
    path = control_plane.write_token_kubeconfig(token, tmp_path / "sa.kubeconfig")
    client = RESTClient.from_kubeconfig(str(path), qps=100, burst=200)
    yield client
    client.close()


def test_controller_runs_with_manifest_rbac(sa_client: RESTClient, env: Env) -> None:
    env.create_cronjob("lp", successfulJobsHistoryLimit=1)
    env.start(client=sa_client)
    made = []
    for _ in range(3):
        due = env.next_minute()
        name = job_name("lp", due)
        wait_for(env.has_job("lp", name), what=name)  # jobs: create
        env.finish_job(name)
        made.append(name)
    # status: patch; events: create/patch; jobs: delete (history).
    wait_for(lambda: (env.cronjob("lp").get("status") or {}).get("lastSuccessfulTime"),
             what="status written")
    wait_for(lambda: made[0] not in env.job_names("lp"), what="history cleanup")
    wait_for(lambda: env.events("SuccessfulCreate", "lp"), what="SuccessfulCreate event")
    # The template check (controller and webhook): a dry-run create, allowed by jobs create.
    verdict = dry_run_job(sa_client, decode(CronJob, env.cronjob("lp")), env.namespace,
                          env.clock.now())
    assert verdict.valid is True, verdict


def test_leader_election_with_manifest_rbac(sa_client: RESTClient, env: Env) -> None:
    # Leases: get/create/update in the controller's own namespace (real clock: the elector's
    # deadlines must not be jumped over by a fake clock).
    led = threading.Event()
    config = LeaderElectionOptions(
        lock=LeaseLock(sa_client, SYSTEM_NS, "lp-lease", "lp-identity"),
        lease_duration=3, renew_deadline=2, retry_period=0.5, id="lp-lease",
        regain_after_fence=False)

    def lead(stop: threading.Event) -> None:
        led.set()
        stop.wait()

    elector = LeaderElector(config, LeaderCallbacks(lead))
    with running(elector.run, name="lp-elector", join_timeout=20):
        assert led.wait(20), "did not acquire the lease"
        lease = env.client.get(LEASES, "lp-lease", SYSTEM_NS)
        assert lease["spec"]["holderIdentity"] == "lp-identity"
    released = env.client.get(LEASES, "lp-lease", SYSTEM_NS)
    assert not released["spec"].get("holderIdentity")


@pytest.mark.parametrize("attempt", ["list secrets", "create cronjob", "update job",
                                     "lease elsewhere"])
def test_requests_outside_the_role_are_refused(sa_client: RESTClient, env: Env,
                                               attempt: str) -> None:
    with pytest.raises(Forbidden):
        if attempt == "list secrets":
            sa_client.list(SECRETS, env.namespace)
        elif attempt == "create cronjob":
            sa_client.create(CRONJOBS, cronjob_body("nope"), env.namespace)
        elif attempt == "update job":
            env.create_cronjob("own")
            job = env.client.create(JOBS, {"metadata": {"name": "j"}, "spec": {
                "suspend": True, "template": {"spec": {"restartPolicy": "Never",
                                                       "containers": [{"name": "c",
                                                                       "image": "x"}]}}}},
                env.namespace)
            job["metadata"]["labels"] = {"changed": "yes"}
            sa_client.update(JOBS, job, env.namespace)
        else:
            sa_client.create(LEASES, {"metadata": {"name": "x"}, "spec": {}}, env.namespace)
