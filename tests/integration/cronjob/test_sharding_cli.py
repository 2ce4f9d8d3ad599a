"""``python -m cronjob_controller --sharding`` wires the Sharding extension end to end.

One replica with ``--sharding --shard-id a``: it holds its shard Lease ``cronjob-shard-a``
and the leader Lease, labels a new CronJob for shard ``a`` (the sharder runs on the leader),
answers the /healthz ``shard-lease`` check, and stops cleanly on SIGTERM (exit code 0). The
in-process sharding tests cover the protocol; this one covers the command line's wiring.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from cronjob_controller.api import CRONJOBS
from pyctrl.kube import RESTClient
from pyctrl.testing.envtest import ControlPlane
from pyctrl.testing.envtest.ports import free_port
from tests.integration.controller_procs import ControllerProcs
from tests.integration.cronjob.env import cronjob_body, wait_for

pytestmark = pytest.mark.integration

SHARD_LABEL = "shard.sharding.pyctrl.io/cronjob"


def test_the_command_line_runs_a_shard_that_labels_and_reconciles(
    control_plane: ControlPlane, client: RESTClient, namespace: str, tmp_path: Path,
) -> None:
    if control_plane.external:
        pytest.skip("runs the controller against the envtest control plane's kubeconfig")
    procs = ControllerProcs(control_plane, client, namespace, tmp_path)
    port = free_port()
    proc = procs.spawn("shard-a", [
        "--sharding", "--shard-id", "a", "--leader-elect-namespace", namespace,
        "--leader-elect-lease-duration", "4", "--leader-elect-renew-deadline", "3",
        "--leader-elect-retry-period", "0.5", "--workers", "2",
        "--metrics-bind-address", "0", "--health-probe-bind-address", f"127.0.0.1:{port}",
        "--graceful-shutdown-timeout", "5"])
    try:
        wait_for(lambda: procs.holder("cronjob-shard-a") == "a", timeout=30,
                 what=f"the shard Lease\n{proc.log_tail()}")
        wait_for(lambda: procs.holder("pyctrl-cronjob-controller"), timeout=30,
                 what="the leader Lease")
        client.create(CRONJOBS, cronjob_body("sharded"), namespace)
        wait_for(lambda: (client.get(CRONJOBS, "sharded", namespace)["metadata"]
                          .get("labels") or {}).get(SHARD_LABEL) == "a",
                 timeout=30, what=f"the shard label\n{proc.log_tail()}")
        url = f"http://127.0.0.1:{port}/healthz/shard-lease"
        with urllib.request.urlopen(url, timeout=5) as resp:
            assert resp.status == 200
    finally:
        codes = procs.stop_all()
    assert codes == {"shard-a": 0}, proc.log_tail()
