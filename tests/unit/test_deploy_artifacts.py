"""What can be checked about the image and manifests without a Docker engine or a cluster.

Every manifest parses; the Deployment, Service, webhook configurations, certificate and RBAC
agree with each other and with the controller's own flags and webhook paths; the Dockerfile is
multi-stage, pinned, non-root, and runs the controller.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from cronjob_controller.__main__ import build_parser
from cronjob_controller.webhook import MUTATE_PATH, VALIDATE_PATH
from pyctrl.healthz import parse_bind_address

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict[str, Any]]:
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for name in kustomization["resources"]:
        for doc in _docs(MANIFESTS / name):
            out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


def _deployment(objects: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    return objects[("Deployment", "cronjob-controller")]


def _container(objects: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    containers = _deployment(objects)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def test_every_yaml_parses_and_kustomization_lists_all_manifests() -> None:
    for path in [*MANIFESTS.rglob("*.yaml"), *(ROOT / "crds").glob("*.yaml")]:
        for doc in _docs(path):
            assert {"apiVersion", "kind", "metadata"} <= doc.keys() or path.name.startswith(
                "kustomization"), path
    listed = set(yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())["resources"])
    present = {p.name for p in MANIFESTS.glob("*.yaml") if p.name != "kustomization.yaml"}
    assert listed == present


def test_image_and_args_match_the_controller(objects: dict[tuple[str, str], Any]) -> None:
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    container = _container(objects)
    image_name = container["image"].rsplit(":", 1)[0]
    assert image_name in {i["name"] for i in kustomization["images"]}
    args, unknown = build_parser().parse_known_args(container["args"])
    assert unknown == []
    assert args.leader_elect and _deployment(objects)["spec"]["replicas"] == 2
    assert args.leader_elect_namespace == _deployment(objects)["metadata"]["namespace"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for flag, port_name in (("metrics_bind_address", "metrics"),
                            ("health_probe_bind_address", "probes"),
                            ("webhook_bind_address", "webhook")):
        bind = parse_bind_address(getattr(args, flag))
        assert bind is not None and bind[1] == ports[port_name], flag
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert args.webhook_cert_dir in mounts


def test_probes_and_security_context(objects: dict[tuple[str, str], Any]) -> None:
    container = _container(objects)
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes"}
    sc = container["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert sc["seccompProfile"]["type"] == "RuntimeDefault"
    pod = _deployment(objects)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["serviceAccountName"] in {n for (k, n) in objects if k == "ServiceAccount"}
    assert {"requests", "limits"} <= container["resources"].keys()


def test_service_webhooks_and_certificate_agree(objects: dict[tuple[str, str], Any]) -> None:
    service = objects[("Service", "cronjob-controller")]
    container_ports = {p["name"] for p in _container(objects)["ports"]}
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= container_ports
    webhook_port = next(p["port"] for p in service["spec"]["ports"] if p["name"] == "webhook")
    cert = objects[("Certificate", "cronjob-controller-webhook")]
    ns = service["metadata"]["namespace"]
    assert f"{service['metadata']['name']}.{ns}.svc" in cert["spec"]["dnsNames"]
    volumes = _deployment(objects)["spec"]["template"]["spec"]["volumes"]
    assert cert["spec"]["secretName"] in {v.get("secret", {}).get("secretName") for v in volumes}
    paths = set()
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        config = objects[(kind, "pyctrl-cronjob-controller")]
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
            f"{ns}/{cert['metadata']['name']}")
        for hook in config["webhooks"]:
            ref = hook["clientConfig"]["service"]
            assert (ref["name"], ref["namespace"], ref["port"]) == (
                service["metadata"]["name"], ns, webhook_port)
            paths.add(ref["path"])
    assert paths == {VALIDATE_PATH, MUTATE_PATH}


def test_rbac_grants_exactly_what_the_controller_uses(
    objects: dict[tuple[str, str], Any],
) -> None:
    role = objects[("ClusterRole", "pyctrl-cronjob-controller")]
    grants = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"]
              for r in rule["resources"] for v in rule["verbs"]}
    expected = {
        *{("batch.pyctrl.io", "cronjobs", v) for v in ("get", "list", "watch")},
        *{("batch.pyctrl.io", "cronjobs/status", v) for v in ("update", "patch")},
        ("batch.pyctrl.io", "cronjobs/finalizers", "update"),
        *{("batch", "jobs", v) for v in ("get", "list", "watch", "create", "delete")},
        *{("", "events", v) for v in ("create", "patch")},
        ("authentication.k8s.io", "tokenreviews", "create"),
        ("authorization.k8s.io", "subjectaccessreviews", "create"),
    }
    assert grants == expected
    lease_role = objects[("Role", "pyctrl-cronjob-controller-leader-election")]
    assert lease_role["metadata"]["namespace"] == "pyctrl-system"
    assert lease_role["rules"] == [{"apiGroups": ["coordination.k8s.io"],
                                    "resources": ["leases"],
                                    "verbs": ["get", "create", "update"]}]


def test_metrics_are_served_securely_to_the_metrics_reader_role(
    objects: dict[tuple[str, str], Any],
) -> None:
    args = build_parser().parse_args(_container(objects)["args"])
    assert args.metrics_secure is True
    bind = parse_bind_address(args.metrics_bind_address)
    assert bind is not None and bind[1] == 8443
    reader = objects[("ClusterRole", "pyctrl-cronjob-controller-metrics-reader")]
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def _dockerfile() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_is_multistage_pinned_nonroot_and_runs_the_controller(
    objects: dict[tuple[str, str], Any],
) -> None:
    instructions = _dockerfile()
    assert sum(1 for word, _ in instructions if word == "FROM") >= 2
    users = [rest for word, rest in instructions if word == "USER"]
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0
    assert str(_deployment(objects)["spec"]["template"]["spec"]["securityContext"]
               ["runAsUser"]) == uid
    entrypoint = [rest for word, rest in instructions if word == "ENTRYPOINT"][-1]
    assert shlex.split(entrypoint.replace('"', "").strip("[]").replace(",", " ")) == [
        "python", "-m", "cronjob_controller"]
    exposed = {int(p) for word, rest in instructions if word == "EXPOSE" for p in rest.split()}
    assert exposed == {p["containerPort"] for p in _container(objects)["ports"]}
    runs = " ".join(rest for word, rest in instructions if word == "RUN")
    assert "--no-deps -r requirements/runtime.lock" in runs
    lock = [line for line in (ROOT / "requirements" / "runtime.lock").read_text().splitlines()
            if line and not line.startswith("#")]
    assert lock and all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[A-Za-z0-9_.+\-]+", x) for x in lock)
    pinned = {x.split("==")[0].lower().replace("_", "-") for x in lock}
    assert {"kubernetes", "croniter", "prometheus-client", "structlog", "tzdata",
            "orjson"} <= pinned


def test_crd_names_and_printer_columns() -> None:
    crd = _docs(ROOT / "crds" / "cronjobs.batch.pyctrl.io.yaml")[0]
    names = crd["spec"]["names"]
    assert crd["metadata"]["name"] == "cronjobs.batch.pyctrl.io"
    assert names["shortNames"] == ["pcj"] and names["categories"] == ["pyctrl"]
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    columns = [c["name"].upper() for c in version["additionalPrinterColumns"]]
    assert columns == ["SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "NEXT",
                       "AGE"]
