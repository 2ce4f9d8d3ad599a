"""A scaffolded project's image built and deployed from its own manifests on the real node,
reconciling its sample (make e2e; issue 40). Skipped without the node (tests/e2e/conftest.py).

``pyctrl init`` + ``create api`` from this checkout, a pyctrl-k8s wheel of this checkout put
in the project's ``wheels/`` (what its Dockerfile installs before the index), the image built
as ``make image`` builds this repository's on the node (hack/cluster/image.sh with the
project as the build context: buildah, imported into the node's containerd), then the
project's own ``make deploy``: its Deployment (two replicas under leader election) becomes
Available and a sample Backup turns Ready; ``make undeploy`` removes it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import KUBECONFIG, ROOT, Kubectl
from tests.integration.dist import build
from tests.waiting import eventually

pytestmark = [pytest.mark.node, pytest.mark.timeout(900)]

IMG = "backup-operator:e2e"
SYSTEM_NS = "backup-operator-system"


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, env=dict(os.environ) | (env or {}),
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture
def project(kubectl: Kubectl, tmp_path: Path) -> Iterator[Path]:
    _run([sys.executable, "-m", "pyctrl", "init", "backup-operator", "--group", "demo"],
         cwd=tmp_path)
    root = tmp_path / "backup-operator"
    _run([sys.executable, "-m", "pyctrl", "create", "api", "--kind", "Backup"], cwd=root)
    shutil.copy(build(tmp_path / "dist").wheel, root / "wheels")
    yield root
    _run(["make", "undeploy", f"IMG={IMG}"], cwd=root,
         env={"KUBECTL": kubectl.binary, "KUBECONFIG": KUBECONFIG})


def test_the_scaffolded_image_deploys_and_reconciles_its_sample(
        kubectl: Kubectl, project: Path, namespace: str) -> None:
    _run(["bash", str(ROOT / "hack" / "cluster" / "image.sh"), IMG], cwd=project,
         env={"BUILD_CONTEXT": str(project)})
    _run(["make", "deploy", f"IMG={IMG}"], cwd=project,
         env={"KUBECTL": kubectl.binary, "KUBECONFIG": KUBECONFIG})
    kubectl("-n", SYSTEM_NS, "rollout", "status", "deployment/backup-operator-controller-manager",
            "--timeout=300s")
    kubectl("-n", namespace, "apply", "-f", str(project / "config" / "samples" / "v1_backup.yaml"))

    def ready() -> bool:
        obj = json.loads(kubectl("-n", namespace, "get", "backup", "backup-sample", "-o",
                                 "json"))
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in (obj.get("status") or {}).get("conditions") or [])

    eventually(ready, 120, "the sample Backup Ready", interval=1.0)
    data = json.loads(kubectl("-n", namespace, "get", "configmap", "backup-sample", "-o",
                              "json"))["data"]
    assert data == {"message": "hello from backup-operator"}
