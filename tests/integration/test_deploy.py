"""`make deploy` / `make undeploy` of manifests/ against a real kube-apiserver.

A control plane of its own (undeploy deletes the pyctrl-system namespace and, in one test, the
CRD, which the session's control plane must keep), with kube-controller-manager's garbage
collector and namespace controller. There is no kubelet, so the Deployment never runs pods;
what is proved is what the apiserver decides:

* ``make deploy OVERLAY=manifests/base IMG=...`` needs no cert-manager: the CRD is applied
  first, then Namespace, ServiceAccount, RBAC, Service, Deployment (with IMG) and
  PodDisruptionBudget are created; a Pod from the Deployment's template is admitted by the
  namespace's Pod Security ``restricted`` level (and a weakened one is refused, so the check
  can fail);
* ``make undeploy`` removes all of that and keeps the CRD, the CronJobs and their Jobs;
  ``UNINSTALL_CRD=1`` deletes the CRD, so every CronJob, and the garbage collector deletes the
  Jobs they own;
* with stand-ins for the cert-manager and Prometheus Operator CRDs, ``make deploy`` of
  manifests/default-prometheus registers the webhooks, and with no webhook server behind them
  every CronJob write is refused (the failure the base avoids); ``make undeploy`` removes them
  and writes work again;
* the built-in objects of manifests/default-prometheus (webhook configurations, the patched
  Deployment and Service, RBAC) pass a server-side dry-run, and a Pod from the webhook-patched
  template passes Pod Security too. The cert-manager and Prometheus Operator objects' own
  schemas are not here: tests/unit/deploy/test_deploy_artifacts.py checks their content.
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

from pyctrl.testing.envtest import ControlPlane
from tests.waiting import poll

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_NS = "pyctrl-system"
IMG = "registry.example:5000/team/cronjob-controller:9.9"
CRD = "cronjobs.batch.pyctrl.io"
APPS_NS = "apps"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ControlPlane]:
    if os.environ.get("PYCTRL_TEST_KUBECONFIG"):
        pytest.skip("deletes its namespace and CRD: needs a control plane of its own")
    with ControlPlane(crd_dirs=[ROOT / "crds"], controller_manager=True,
                      start_timeout=150) as cp:
        cp.kubectl("create", "namespace", APPS_NS)
        yield cp


def _make(cluster: ControlPlane, target: str, **variables: str) -> subprocess.CompletedProcess[str]:
    kubectl = cluster.binaries.kubectl
    assert kubectl is not None
    # Not a calling make's MAKEFLAGS (its jobserver is not ours).
    env = {**{k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")},
           "KUBECONFIG": cluster.kubeconfig_path}
    done = subprocess.run(
        ["make", "-s", "-C", str(ROOT), target, f"KUBECTL={kubectl}",
         *(f"{k}={v}" for k, v in variables.items())],
        env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _get(cluster: ControlPlane, *args: str) -> dict[str, Any] | None:
    done = cluster.kubectl("get", *args, "-o", "json", check=False)
    if done.returncode != 0:
        assert "NotFound" in done.stderr or "not found" in done.stderr, done.stderr
        return None
    return dict(json.loads(done.stdout))


def _pod_from(deployment: dict[str, Any], name: str) -> dict[str, Any]:
    template = copy.deepcopy(deployment["spec"]["template"])
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": deployment["metadata"]["namespace"],
                         "labels": template["metadata"]["labels"]},
            "spec": template["spec"]}


def _dry_run_pod(cluster: ControlPlane, pod: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(pod),
                           check=False)


def _cronjob_with_job(cluster: ControlPlane, name: str) -> None:
    """A CronJob (the sample) and a Job it controls, as the controller would have made."""
    sample = yaml.safe_load((ROOT / "manifests" / "samples" / "cronjob.yaml").read_text())
    sample["metadata"] = {"name": name, "namespace": APPS_NS}
    cluster.kubectl("create", "-f", "-", input=json.dumps(sample))
    cronjob = _get(cluster, "cronjobs.batch.pyctrl.io", name, "-n", APPS_NS)
    assert cronjob is not None
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": f"{name}-1", "namespace": APPS_NS, "ownerReferences": [{
               "apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob", "name": name,
               "uid": cronjob["metadata"]["uid"], "controller": True,
               "blockOwnerDeletion": True}]},
           "spec": sample["spec"]["jobTemplate"]["spec"]}
    cluster.kubectl("create", "-f", "-", input=json.dumps(job))


def test_base_deploys_without_cert_manager_and_undeploy_keeps_cronjobs_and_jobs(
    cluster: ControlPlane,
) -> None:
    out = _make(cluster, "deploy", OVERLAY="manifests/base", IMG=IMG)
    assert out.stdout.index("CRD") < out.stdout.index("manifests/base")
    deployment = _get(cluster, "deployment", "cronjob-controller", "-n", SYSTEM_NS)
    assert deployment is not None
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == IMG and deployment["spec"]["replicas"] == 2
    assert not any("secret" in v for v in deployment["spec"]["template"]["spec"]["volumes"])
    pdb = _get(cluster, "pdb", "cronjob-controller", "-n", SYSTEM_NS)
    assert pdb is not None and pdb["spec"]["minAvailable"] == 1
    for args in (("serviceaccount", "cronjob-controller", "-n", SYSTEM_NS),
                 ("service", "cronjob-controller", "-n", SYSTEM_NS),
                 ("clusterrole", "pyctrl-cronjob-controller"),
                 ("clusterrolebinding", "pyctrl-cronjob-controller"),
                 ("clusterrole", "pyctrl-cronjob-controller-metrics-reader"),
                 ("role", "pyctrl-cronjob-controller-leader-election", "-n", SYSTEM_NS),
                 ("rolebinding", "pyctrl-cronjob-controller-leader-election", "-n", SYSTEM_NS)):
        assert _get(cluster, *args) is not None, args
    assert _get(cluster, "validatingwebhookconfigurations", "pyctrl-cronjob-controller") is None
    namespace = _get(cluster, "namespace", SYSTEM_NS)
    assert namespace is not None
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"

    admitted = _dry_run_pod(cluster, _pod_from(deployment, "base-pod"))
    assert admitted.returncode == 0, admitted.stderr
    weakened = _pod_from(deployment, "weak-pod")
    del weakened["spec"]["containers"][0]["securityContext"]["capabilities"]
    refused = _dry_run_pod(cluster, weakened)
    assert refused.returncode != 0 and "PodSecurity" in refused.stderr, refused.stderr

    _cronjob_with_job(cluster, "kept")
    out = _make(cluster, "undeploy", OVERLAY="manifests/base")
    assert "CRD kept" in out.stdout
    assert _get(cluster, "namespace", SYSTEM_NS) is None  # kubectl delete waited for it
    assert _get(cluster, "clusterrole", "pyctrl-cronjob-controller") is None
    assert _get(cluster, "crd", CRD) is not None
    assert _get(cluster, "cronjobs.batch.pyctrl.io", "kept", "-n", APPS_NS) is not None
    assert _get(cluster, "job", "kept-1", "-n", APPS_NS) is not None


def test_default_overlay_builtin_objects_pass_server_dry_run(cluster: ControlPlane) -> None:
    kubectl = cluster.binaries.kubectl
    assert kubectl is not None
    rendered = subprocess.run([str(kubectl), "kustomize",
                               str(ROOT / "manifests" / "default-prometheus")],
                              capture_output=True, text=True, timeout=60, check=True).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    builtin = [d for d in docs if d["apiVersion"].split("/")[0] not in {
        "cert-manager.io", "monitoring.coreos.com"}]
    assert {d["kind"] for d in docs} - {d["kind"] for d in builtin} == {
        "Issuer", "Certificate", "ServiceMonitor", "PrometheusRule"}
    # Namespaced objects need their namespace to exist, even for a dry-run.
    cluster.kubectl("apply", "-f", str(ROOT / "manifests" / "base" / "namespace.yaml"))
    body = "\n---\n".join(yaml.safe_dump(d) for d in builtin)
    done = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=body, check=False)
    assert done.returncode == 0, done.stderr
    assert "validatingwebhookconfiguration.admissionregistration.k8s.io/" in done.stdout
    assert _get(cluster, "validatingwebhookconfigurations", "pyctrl-cronjob-controller") is None
    deployment = next(d for d in builtin if d["kind"] == "Deployment")
    admitted = _dry_run_pod(cluster, _pod_from(deployment, "webhook-pod"))
    assert admitted.returncode == 0, admitted.stderr


def _stub_crd(group: str, kind: str) -> dict[str, Any]:
    """A schemaless stand-in for a CRD this apiserver lacks (cert-manager, Prometheus Operator)."""
    plural = kind.lower() + "s"
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(),
                               "listKind": f"{kind}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                         "openAPIV3Schema": {"type": "object",
                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}


def test_webhooks_without_their_server_refuse_cronjob_writes_until_undeploy(
    cluster: ControlPlane,
) -> None:
    # What issue 13 saw: the webhook configurations registered with nothing answering them
    # (here: no pods; without cert-manager: no certificate) refuse every CronJob write. The
    # base does not register them; undeploy removes them first.
    stubs = [_stub_crd("cert-manager.io", "Issuer"), _stub_crd("cert-manager.io", "Certificate"),
             _stub_crd("monitoring.coreos.com", "ServiceMonitor"),
             _stub_crd("monitoring.coreos.com", "PrometheusRule")]
    body = "\n---\n".join(yaml.safe_dump(s) for s in stubs)
    cluster.kubectl("apply", "-f", "-", input=body)
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", "-",
                    input=body)
    _make(cluster, "deploy", OVERLAY="manifests/default-prometheus", IMG=IMG)
    for args in (("certificates.cert-manager.io", "cronjob-controller-webhook"),
                 ("servicemonitors.monitoring.coreos.com", "cronjob-controller"),
                 ("prometheusrules.monitoring.coreos.com", "cronjob-controller")):
        assert _get(cluster, *args, "-n", SYSTEM_NS) is not None, args
    deployment = _get(cluster, "deployment", "cronjob-controller", "-n", SYSTEM_NS)
    assert deployment is not None
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "--webhook-bind-address=:9443" in container["args"]

    sample = yaml.safe_load((ROOT / "manifests" / "samples" / "cronjob.yaml").read_text())
    sample["metadata"] = {"name": "gated", "namespace": APPS_NS}
    refused = cluster.kubectl("create", "-f", "-", input=json.dumps(sample), check=False)
    assert refused.returncode != 0 and "failed calling webhook" in refused.stderr, (
        refused.stderr)

    _make(cluster, "undeploy", OVERLAY="manifests/default-prometheus")
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        assert _get(cluster, kind, "pyctrl-cronjob-controller") is None
    cluster.kubectl("create", "-f", "-", input=json.dumps(sample))
    assert _get(cluster, "crd", CRD) is not None


def test_undeploy_with_uninstall_crd_deletes_cronjobs_and_gc_deletes_their_jobs(
    cluster: ControlPlane,
) -> None:
    _make(cluster, "deploy", OVERLAY="manifests/base", IMG=IMG)
    _cronjob_with_job(cluster, "doomed")
    out = _make(cluster, "undeploy", OVERLAY="manifests/base", UNINSTALL_CRD="1")
    assert "every CronJob in every namespace" in out.stdout
    assert poll(lambda: _get(cluster, "crd", CRD) is None, 60), "CRD still there"
    assert poll(lambda: _get(cluster, "job", "doomed-1", "-n", APPS_NS) is None, 90), (
        "the garbage collector did not delete the Job of a deleted CronJob")
    assert _get(cluster, "namespace", SYSTEM_NS) is None
