"""A scaffolded project's manifests against a real kube-apiserver: a project with admission
webhooks and a kind in two versions with its conversion webhook (``pyctrl init``, ``create
api``, ``create webhook``, ``create api --version v2``, ``create webhook --conversion``).

Its CRDs are applied (server-side, as ``make deploy`` does) and become Established, the
converted kind's with ``strategy: Webhook`` and the cert-manager annotation kept; every
built-in object ``make render`` gives (Namespace created for real, then RBAC, Services,
Deployment, PDB, NetworkPolicy and both webhook configurations) passes a server-side
dry-run; and a Pod from the Deployment's template (with the webhook certificate's Secret
mounted) is admitted by the namespace's Pod Security ``restricted`` level. The cert-manager
objects' schemas are not on this apiserver: tests/unit/scaffold/test_scaffold_manifests.py
checks their content.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyctrl.cli import main
from pyctrl.testing.envtest import ControlPlane

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

NAME, NS = "shop-operator", "shop-operator-system"


@pytest.fixture
def project(control_plane: ControlPlane, tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "shop"
    assert main(["init", NAME, "--group", "shop", "--dir", str(root)]) == 0
    for command in (["api", "--kind", "Order"], ["webhook", "--kind", "Order"],
                    ["api", "--kind", "Order", "--version", "v2"],
                    ["webhook", "--kind", "Order", "--conversion"]):
        assert main(["create", *command, "--dir", str(root)]) == 0
    yield root
    control_plane.kubectl("delete", "--ignore-not-found", "-f", str(root / "config" / "crd"),
                          check=False)
    control_plane.kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=false",
                          check=False)


def test_the_scaffolded_manifests_pass_the_api_server(control_plane: ControlPlane,
                                                      project: Path) -> None:
    crd = project / "config" / "crd" / "orders.shop.example.com.yaml"
    control_plane.kubectl("apply", "--server-side", "-f", str(crd))
    control_plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f",
                          str(crd))
    stored = json.loads(control_plane.kubectl("get", "-f", str(crd), "-o", "json").stdout)
    assert stored["spec"]["conversion"]["strategy"] == "Webhook"
    assert stored["spec"]["conversion"]["webhook"]["clientConfig"]["service"] == {
        "namespace": NS, "name": f"{NAME}-webhook-service", "path": "/convert-order",
        "port": 443}
    assert stored["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
        f"{NS}/{NAME}-serving-cert")
    assert [v["name"] for v in stored["spec"]["versions"] if v["storage"]] == ["v1"]

    kubectl = control_plane.binaries.kubectl
    assert kubectl is not None
    env = {**{k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")},
           "KUBECONFIG": control_plane.kubeconfig_path}
    done = subprocess.run(["make", "-s", "render", "IMG=registry.example/shop:1.0",
                           f"KUBECTL={kubectl}"], cwd=project, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    builtin = [d for d in docs if not d["apiVersion"].startswith("cert-manager.io/")]
    assert {d["kind"] for d in docs} - {d["kind"] for d in builtin} == {"Issuer", "Certificate"}
    namespace = next(d for d in builtin if d["kind"] == "Namespace")
    control_plane.kubectl("apply", "-f", "-", input=json.dumps(namespace))
    rest = [d for d in builtin if d["kind"] != "Namespace"]
    done = control_plane.kubectl("apply", "--dry-run=server", "-f", "-",
                                 input="\n---\n".join(yaml.safe_dump(d) for d in rest),
                                 check=False)
    assert done.returncode == 0, done.stderr
    accepted = {line.split("/", 1)[0] for line in done.stdout.splitlines()}
    assert {"validatingwebhookconfiguration.admissionregistration.k8s.io",
            "mutatingwebhookconfiguration.admissionregistration.k8s.io", "deployment.apps",
            "networkpolicy.networking.k8s.io", "service"} <= accepted, done.stdout

    deployment = next(d for d in builtin if d["kind"] == "Deployment")
    template = copy.deepcopy(deployment["spec"]["template"])
    assert any("secret" in v for v in template["spec"]["volumes"])
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "manager", "namespace": NS, "labels": template["metadata"]["labels"]},
        "spec": template["spec"]}
    admitted = control_plane.kubectl("create", "--dry-run=server", "-f", "-",
                                     input=json.dumps(pod), check=False)
    assert admitted.returncode == 0, admitted.stderr
    pod["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = True
    refused = control_plane.kubectl("create", "--dry-run=server", "-f", "-",
                                    input=json.dumps(pod), check=False)
    assert refused.returncode != 0 and "restricted" in refused.stderr, refused.stderr
