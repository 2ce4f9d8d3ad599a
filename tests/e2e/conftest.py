"""Fixtures of the e2e tests on a real node (make e2e; issue 34).

They run against the cluster `make cluster` started (PYCTRL_E2E_KUBECONFIG, default
/var/lib/pyctrl-cluster/kubeconfig) with the controller deployed by `make deploy` as its
Deployment pyctrl-system/cronjob-controller; they skip when that kubeconfig does not exist.
Everything goes through kubectl (the control plane's own, from hack/controlplane/build.sh),
as a user would; each test gets a fresh namespace, deleted after it.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
KUBECONFIG = os.environ.get("PYCTRL_E2E_KUBECONFIG", "/var/lib/pyctrl-cluster/kubeconfig")


class Kubectl:
    """kubectl on the e2e cluster."""

    def __init__(self, binary: str, kubeconfig: str) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig

    def __call__(self, *args: str, input: str | None = None, check: bool = True) -> str:
        done = subprocess.run([self.binary, f"--kubeconfig={self.kubeconfig}", *args],
                              input=input, capture_output=True, text=True, timeout=120,
                              check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "-o", "json"))

    def apply(self, namespace: str, obj: dict[str, Any]) -> None:
        self("-n", namespace, "apply", "-f", "-", input=json.dumps(obj))


@pytest.fixture(scope="session")
def kubectl() -> Kubectl:
    if not Path(KUBECONFIG).exists():
        pytest.skip(f"no real node: {KUBECONFIG} does not exist (make cluster && make deploy)")
    bin_dir = subprocess.run(["bash", str(ROOT / "hack/controlplane/build.sh")],
                             capture_output=True, text=True, check=True).stdout.strip()
    return Kubectl(str(Path(bin_dir) / "kubectl"), KUBECONFIG)


@pytest.fixture
def namespace(kubectl: Kubectl) -> Iterator[str]:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    kubectl("create", "namespace", name)
    yield name
    kubectl("delete", "namespace", name, "--wait=false")
