"""make cluster / make cluster-down leave the host as they found it (issue 34).

Root only, and opted in with PYCTRL_NODE=1: it starts a real node (hack/cluster/up.sh), runs
one busybox pod to Completed on it, and tears it down (hack/cluster/down.sh). The host is
recorded here, independently of up.sh's own record, with hack/cluster/hoststate.py: sysctls,
iptables chains and rules, /proc/mounts, cgroup directories, listening sockets and processes of
the node, network interfaces, addresses and routes, and the paths a kubelet, containerd or CNI
create. The record taken while the node runs must differ (the comparison sees the node), the
one after the teardown must not.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("PYCTRL_CLUSTER_DIR", "/var/lib/pyctrl-cluster"))

pytestmark = [
    pytest.mark.node,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(os.geteuid() != 0 or os.environ.get("PYCTRL_NODE") != "1",
                       reason="starts a real node on this host: root and PYCTRL_NODE=1 only"),
]


def _hoststate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hoststate", ROOT / "hack/cluster/hoststate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kubectl(bin_dir: Path, kubeconfig: str, *args: str) -> str:
    return subprocess.run([str(bin_dir / "kubectl"), f"--kubeconfig={kubeconfig}", *args],
                          capture_output=True, text=True, check=True, timeout=60).stdout


def test_cluster_up_and_down_leave_the_host_as_it_was() -> None:
    if STATE.exists():
        pytest.fail(f"{STATE} exists: a cluster is up (make cluster-down first)")
    hoststate = _hoststate()
    before = hoststate.snapshot()
    bin_dir = Path(subprocess.run(["bash", str(ROOT / "hack/controlplane/build.sh"), "--node"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    up = subprocess.run(["bash", str(ROOT / "hack/cluster/up.sh")], capture_output=True,
                        text=True, timeout=900, check=False)
    try:
        assert up.returncode == 0, up.stderr
        kubeconfig = up.stdout.strip()
        _kubectl(bin_dir, kubeconfig, "run", "hostcheck", "--image=busybox:1.36",
                 "--image-pull-policy=Never", "--restart=Never", "--", "sh", "-c", "echo ok")
        eventually(lambda: _kubectl(bin_dir, kubeconfig, "get", "pod", "hostcheck",
                                    "-o", "jsonpath={.status.phase}") == "Succeeded",
                   120, "the hostcheck pod Succeeded", interval=1.0)
        assert _kubectl(bin_dir, kubeconfig, "logs", "hostcheck").strip() == "ok"
        during = hoststate.differences(before, hoststate.snapshot())
        # The node changed the host in every way the record covers; otherwise the comparison
        # after the teardown would prove nothing.
        kinds = {line.split()[0] for line in during}
        assert {"sysctl", "iptables", "nft", "mounts", "cgroups", "listeners", "processes",
                "links", "paths"} <= kinds, during
    finally:
        down = subprocess.run(["bash", str(ROOT / "hack/cluster/down.sh")], capture_output=True,
                              text=True, timeout=300, check=False)
    assert down.returncode == 0, down.stderr
    assert hoststate.differences(before, hoststate.snapshot()) == []
    assert not STATE.exists()
