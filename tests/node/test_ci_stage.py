"""CI's real-node stage gives the host back even when its tests fail (issue 43).

Root only, opted in with PYCTRL_NODE=1 (hack/cluster/ci.sh runs it after its own e2e run).
It runs the whole stage, hack/cluster/ci.sh, with an e2e selection that matches no test, so
``make e2e`` fails after the node was started, the image built and the operator deployed; the
stage must exit non-zero, say so, and leave the host exactly as this test recorded it
beforehand (hack/cluster/hoststate.py, independently of the stage's own record), with no
cluster state directory left.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.node.test_host_restored import ROOT, STATE, _hoststate

pytestmark = [
    pytest.mark.node,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(os.geteuid() != 0 or os.environ.get("PYCTRL_NODE") != "1",
                       reason="starts a real node on this host: root and PYCTRL_NODE=1 only"),
]


def test_a_failing_stage_still_restores_the_host() -> None:
    if STATE.exists():
        pytest.fail(f"{STATE} exists: a cluster is up (make cluster-down first)")
    hoststate = _hoststate()
    # The stage installs its packages before it records the host; do the same so that only
    # the node's own changes are compared.
    prepared = subprocess.run(["bash", str(ROOT / "hack/cluster/up.sh"), "--prepare"],
                              capture_output=True, text=True, timeout=1800, check=False,
                              env=dict(os.environ, PYCTRL_CLUSTER_APT="1"))
    assert prepared.returncode == 0, prepared.stderr
    before = hoststate.snapshot()
    stage = subprocess.run(
        ["bash", str(ROOT / "hack/cluster/ci.sh")], capture_output=True, text=True,
        timeout=1800, check=False,
        env=dict(os.environ, PYCTRL_CI_NODE="1", PYCTRL_CI_NODE_SKIP_NODE_TESTS="1",
                 PYCTRL_CI_NODE_E2E="-k no_test_has_this_name"))
    assert stage.returncode != 0, stage.stderr[-3000:]
    assert "ci-node: make e2e" in stage.stderr, stage.stderr[-3000:]  # it got that far
    assert "ci-node: FAILED" in stage.stderr, stage.stderr[-3000:]
    assert "differs from its record" not in stage.stderr, stage.stderr[-3000:]
    assert hoststate.differences(before, hoststate.snapshot()) == []
    assert not STATE.exists()
