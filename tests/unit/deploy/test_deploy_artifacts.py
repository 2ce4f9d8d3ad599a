"""What can be checked about the image and manifests without a Docker engine or a cluster.

manifests/ is a kustomize tree: ``base`` (works alone, no cert-manager), the components
``webhook`` (cert-manager Issuer/Certificate, webhook configurations, and JSON patches adding
the webhook server to the Deployment and Service) and ``prometheus`` (ServiceMonitor, alert
rules), and the overlays ``default`` (base + webhook), ``default-prometheus`` and
``sharded`` (default + 3 replicas with ``--sharding`` and the sharding RBAC). Every file
parses and is listed; the overlays are composed here in Python (resources, components, JSON
"add" patches) so the checks below run without kubectl, and, when a kubectl binary is found,
``kubectl kustomize`` renders each overlay to exactly the objects composed here. The
Deployment, Service, webhook configurations, certificate and RBAC agree with each other and
with the controller's flags and webhook paths; the NetworkPolicy admits exactly the
container's ports and lets out only API server and DNS traffic; the alert rules name metrics
the code exports and pass ``promtool check rules`` / ``promtool test rules`` when promtool is
installed; the Dockerfile is multi-stage, pinned, non-root, and runs the controller.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from cronjob_controller.__main__ import build_parser
from cronjob_controller.webhook import MUTATE_PATH, VALIDATE_PATH
from pyctrl.serving import parse_bind_address
from tests.kustomize import build as _build
from tests.kustomize import docs as _docs
from tests.kustomize import kubectl as _kubectl
from tests.kustomize import kustomization as _kustomization

ROOT = Path(__file__).resolve().parents[3]
MANIFESTS = ROOT / "manifests"
BASE = MANIFESTS / "base"
WEBHOOK = MANIFESTS / "components" / "webhook"
PROMETHEUS = MANIFESTS / "components" / "prometheus"
OVERLAYS = ("base", "default", "default-prometheus", "sharded")

Objects = dict[tuple[str, str], dict[str, Any]]

BASE_KEYS = {
    ("Namespace", "pyctrl-system"),
    ("ServiceAccount", "cronjob-controller"),
    ("ClusterRole", "pyctrl-cronjob-controller"),
    ("ClusterRoleBinding", "pyctrl-cronjob-controller"),
    ("Role", "pyctrl-cronjob-controller-leader-election"),
    ("RoleBinding", "pyctrl-cronjob-controller-leader-election"),
    ("ClusterRole", "pyctrl-cronjob-controller-metrics-reader"),
    ("Service", "cronjob-controller"),
    ("Deployment", "cronjob-controller"),
    ("PodDisruptionBudget", "cronjob-controller"),
    ("NetworkPolicy", "cronjob-controller"),
}
WEBHOOK_KEYS = {
    ("Issuer", "cronjob-controller-selfsigned"),
    ("Certificate", "cronjob-controller-webhook"),
    ("MutatingWebhookConfiguration", "pyctrl-cronjob-controller"),
    ("ValidatingWebhookConfiguration", "pyctrl-cronjob-controller"),
}
PROMETHEUS_KEYS = {
    ("ServiceMonitor", "cronjob-controller"),
    ("PrometheusRule", "cronjob-controller"),
    ("ClusterRoleBinding", "pyctrl-cronjob-controller-metrics-reader"),
}
SHARDING_KEYS = {
    ("ClusterRole", "pyctrl-cronjob-controller-sharding"),
    ("ClusterRoleBinding", "pyctrl-cronjob-controller-sharding"),
    ("Role", "pyctrl-cronjob-controller-sharding"),
    ("RoleBinding", "pyctrl-cronjob-controller-sharding"),
}
EXPECTED = {
    "base": BASE_KEYS,
    "sharded": BASE_KEYS | WEBHOOK_KEYS | SHARDING_KEYS,
    "default": BASE_KEYS | WEBHOOK_KEYS,
    "default-prometheus": BASE_KEYS | WEBHOOK_KEYS | PROMETHEUS_KEYS,
}


def compose(overlay: str) -> Objects:
    out: Objects = {}
    for doc in _build(MANIFESTS / overlay, []):
        key = (doc["kind"], doc["metadata"]["name"])
        assert key not in out, key
        out[key] = doc
    return out


@pytest.fixture(scope="module")
def objects() -> Objects:
    """The default overlay (what `make deploy` applies): base + webhook component."""
    return compose("default")


@pytest.fixture(scope="module")
def base() -> Objects:
    return compose("base")


def _deployment(objects: Objects) -> dict[str, Any]:
    return objects[("Deployment", "cronjob-controller")]


def _container(objects: Objects) -> dict[str, Any]:
    containers = _deployment(objects)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def test_every_yaml_parses_and_each_kustomization_lists_its_directory() -> None:
    for path in [*MANIFESTS.rglob("*.yaml"), *(ROOT / "crds").glob("*.yaml")]:
        for doc in _docs(path):
            if isinstance(doc, list):  # a JSON patch
                assert all({"op", "path"} <= op.keys() for op in doc), path
            else:
                assert {"apiVersion", "kind", "metadata"} <= doc.keys() or path.name.startswith(
                    "kustomization"), path
    dirs = {p.parent for p in MANIFESTS.rglob("kustomization.yaml")}
    assert dirs == {BASE, WEBHOOK, PROMETHEUS, *(MANIFESTS / o for o in OVERLAYS)}
    for directory in dirs:
        k = _kustomization(directory)
        listed = {r for r in k.get("resources", []) if not (directory / r).is_dir()}
        listed |= {p["path"] for p in k.get("patches", [])}
        present = {p.name for p in directory.glob("*.yaml") if p.name != "kustomization.yaml"}
        assert listed == present, directory


def test_overlays_hold_exactly_their_objects_and_each_object_lives_in_one_file() -> None:
    for overlay, expected in EXPECTED.items():
        assert set(compose(overlay)) == expected, overlay
    seen: dict[tuple[str, str], Path] = {}
    for path in MANIFESTS.rglob("*.yaml"):
        if path.name == "kustomization.yaml" or path.parent.name == "samples":
            continue
        for doc in _docs(path):
            if isinstance(doc, dict):
                key = (doc["kind"], doc["metadata"]["name"])
                assert key not in seen, (key, path, seen.get(key))
                seen[key] = path


def test_image_and_args_match_the_controller(objects: Objects) -> None:
    kustomization = _kustomization(BASE)
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


def test_base_runs_without_the_webhook_or_its_certificate(base: Objects) -> None:
    container = _container(base)
    args, unknown = build_parser().parse_known_args(container["args"])
    assert unknown == []
    assert parse_bind_address(args.webhook_bind_address) is None  # '0': server disabled
    assert "webhook" not in {p["name"] for p in container["ports"]}
    pod = _deployment(base)["spec"]["template"]["spec"]
    assert not [v for v in pod["volumes"] if "secret" in v]
    assert {m["name"] for m in container["volumeMounts"]} == {v["name"] for v in pod["volumes"]}
    service = base[("Service", "cronjob-controller")]
    assert [p["name"] for p in service["spec"]["ports"]] == ["metrics"]
    assert not any(kind.endswith("WebhookConfiguration") or group == "cert-manager.io"
                   for (kind, _), group in ((k, o["apiVersion"].split("/")[0])
                                            for k, o in base.items()))


def test_two_replicas_are_spread_and_one_survives_voluntary_disruption(base: Objects) -> None:
    deployment = _deployment(base)
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["replicas"] == 2
    pdb = base[("PodDisruptionBudget", "cronjob-controller")]
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    spread = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert {c["topologyKey"] for c in spread} >= {"kubernetes.io/hostname"}
    for c in spread:
        assert c["maxSkew"] == 1 and c["whenUnsatisfiable"] == "ScheduleAnyway"
        assert c["labelSelector"]["matchLabels"].items() <= pod_labels.items()


def test_probes_and_security_context(objects: Objects) -> None:
    container = _container(objects)
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes"}
    # A slow first cache sync must not become a liveness restart loop: the startup probe
    # (which holds liveness back) waits on /readyz for at least 5 minutes.
    startup = container["startupProbe"]
    assert startup["httpGet"] == {"path": "/readyz", "port": "probes"}
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300
    assert "initialDelaySeconds" not in container["livenessProbe"]
    sc = container["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert sc["seccompProfile"]["type"] == "RuntimeDefault"
    pod = _deployment(objects)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["serviceAccountName"] in {n for (k, n) in objects if k == "ServiceAccount"}
    assert {"requests", "limits"} <= container["resources"].keys()


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_network_policy_admits_every_container_port_and_only_api_and_dns_egress(
        overlay: str) -> None:
    objs = compose(overlay)
    policy = objs[("NetworkPolicy", "cronjob-controller")]["spec"]
    pod_labels = _deployment(objs)["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert set(policy["policyTypes"]) == {"Ingress", "Egress"}
    # Ingress from anywhere (no `from`), to exactly the container's named ports: metrics,
    # probes (kubelet traffic some CNIs do not exempt) and, with the webhook, the webhook.
    [ingress] = policy["ingress"]
    assert "from" not in ingress
    container_ports = {p["name"] for p in _container(objs)["ports"]}
    assert {p["port"] for p in ingress["ports"]} == container_ports
    assert ("webhook" in container_ports) == (overlay != "base")
    # Egress: the API server (443 via the Service, 6443 on its endpoints) and DNS only.
    egress = {(p["port"], p["protocol"]) for rule in policy["egress"] for p in rule["ports"]}
    assert egress == {(443, "TCP"), (6443, "TCP"), (53, "UDP"), (53, "TCP")}


def test_service_webhooks_and_certificate_agree(objects: Objects) -> None:
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
        # hack/deploy.sh undeploy deletes them first, by this label.
        assert config["metadata"]["labels"]["app.kubernetes.io/name"] == "cronjob-controller"
        for hook in config["webhooks"]:
            ref = hook["clientConfig"]["service"]
            assert (ref["name"], ref["namespace"], ref["port"]) == (
                service["metadata"]["name"], ns, webhook_port)
            paths.add(ref["path"])
    assert paths == {VALIDATE_PATH, MUTATE_PATH}


def test_rbac_grants_exactly_what_the_controller_uses(objects: Objects) -> None:
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


def test_sharded_overlay_runs_three_active_replicas_with_exactly_the_sharding_rbac() -> None:
    objects = compose("sharded")
    args, unknown = build_parser().parse_known_args(_container(objects)["args"])
    assert unknown == []
    assert args.sharding and _deployment(objects)["spec"]["replicas"] == 3
    env = {e["name"] for e in _container(objects)["env"]}
    assert "POD_NAME" in env  # the shard id
    role = objects[("ClusterRole", "pyctrl-cronjob-controller-sharding")]
    assert role["rules"] == [{"apiGroups": ["batch.pyctrl.io"], "resources": ["cronjobs"],
                              "verbs": ["patch"]},
                             {"apiGroups": ["batch"], "resources": ["jobs"],
                              "verbs": ["patch"]}]
    leases = objects[("Role", "pyctrl-cronjob-controller-sharding")]
    assert leases["metadata"]["namespace"] == args.leader_elect_namespace
    assert leases["rules"] == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                                "verbs": ["list", "watch"]}]
    for kind, ref in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        binding = objects[(kind, "pyctrl-cronjob-controller-sharding")]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": ref,
                                      "name": "pyctrl-cronjob-controller-sharding"}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "cronjob-controller",
                                        "namespace": "pyctrl-system"}]


def test_metrics_are_served_securely_to_the_metrics_reader_role(objects: Objects) -> None:
    args = build_parser().parse_args(_container(objects)["args"])
    assert args.metrics_secure is True
    bind = parse_bind_address(args.metrics_bind_address)
    assert bind is not None and bind[1] == 8443
    reader = objects[("ClusterRole", "pyctrl-cronjob-controller-metrics-reader")]
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


# -- prometheus component -------------------------------------------------------------------
def _rules_file() -> dict[str, Any]:
    rule = compose("default-prometheus")[("PrometheusRule", "cronjob-controller")]
    return dict(rule["spec"])


def _alerts() -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for g in _rules_file()["groups"] for r in g["rules"]}


def test_service_monitor_scrapes_the_https_metrics_port_as_a_metrics_reader() -> None:
    objs = compose("default-prometheus")
    monitor = objs[("ServiceMonitor", "cronjob-controller")]
    service = objs[("Service", "cronjob-controller")]
    assert monitor["metadata"]["namespace"] == service["metadata"]["namespace"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= (
        service["metadata"]["labels"].items())
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["port"] == "metrics" and endpoint["scheme"] == "https"
    assert endpoint["path"] == "/metrics"
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}
    binding = objs[("ClusterRoleBinding", "pyctrl-cronjob-controller-metrics-reader")]
    assert binding["roleRef"]["name"] == "pyctrl-cronjob-controller-metrics-reader"
    assert [s["kind"] for s in binding["subjects"]] == ["ServiceAccount"]


def test_alerts_use_metrics_the_code_exports() -> None:
    alerts = _alerts()
    assert set(alerts) == {"CronJobControllerJobCreationSkewHigh",
                           "CronJobControllerReconcileErrors", "CronJobControllerNoLeader"}
    sources = {
        "cronjob_controller_cronjob_job_creation_skew_duration_seconds":
            ROOT / "cronjob_controller" / "metrics.py",
        "controller_runtime_reconcile_errors": ROOT / "pyctrl" / "controller.py",
        "leader_election_master_status": ROOT / "pyctrl" / "leaderelection" / "elector.py",
    }
    for alert, metric in (("CronJobControllerJobCreationSkewHigh",
                           "cronjob_controller_cronjob_job_creation_skew_duration_seconds"),
                          ("CronJobControllerReconcileErrors",
                           "controller_runtime_reconcile_errors"),
                          ("CronJobControllerNoLeader", "leader_election_master_status")):
        assert metric in alerts[alert]["expr"], alert
        assert f'"{metric}"' in sources[metric].read_text(), metric
        assert alerts[alert]["labels"]["severity"] in {"warning", "critical"}
    # The Lease name the leader alert filters on is the one the Deployment runs with.
    args = build_parser().parse_args(_container(compose("base"))["args"])
    assert f'name="{args.leader_elect_name}"' in alerts["CronJobControllerNoLeader"]["expr"]
    assert 'job="cronjob-controller"' in alerts["CronJobControllerNoLeader"]["expr"]


def test_every_alert_links_its_runbook_section_in_the_operator_guide() -> None:
    guide = (ROOT / "docs" / "OPERATOR.md").read_text()
    runbook = guide[guide.index("## Alert runbook"):]
    runbook = runbook.split("\n## ", 1)[0]  # up to the next section, if any
    for alert, rule in _alerts().items():
        url = rule["annotations"]["runbook_url"]
        assert url.startswith("https://") and url.endswith(f"docs/OPERATOR.md#{alert.lower()}"), url
        assert f"\n### {alert}\n" in runbook, alert  # GitHub's anchor: the heading, lowered


_SKEW = "cronjob_controller_cronjob_job_creation_skew_duration_seconds_bucket"
_SEL = 'job="cronjob-controller"'


def _skew_series(late: bool) -> list[dict[str, str]]:
    """One run a minute, each 40 s late (late) or 1 s late; buckets 1, 2, ..., 512, +Inf."""
    out = []
    for le in [*(str(2**i) for i in range(10)), "+Inf"]:
        hit = le == "+Inf" or float(le) >= (40 if late else 1)
        out.append({"series": f'{_SKEW}{{{_SEL},le="{le}"}}',
                    "values": "0+1x40" if hit else "0x40"})
    return out


_NO_LEADER = ("No replica has led for 5 minutes: scheduled CronJob runs are not being "
              "created.")


def _fires(alert: str, description: str, **labels: str) -> dict[str, Any]:
    """A firing alert as promtool reports it: labels, the rule's summary, ``description``."""
    rule = _alerts()[alert]
    return {"exp_labels": {**rule["labels"], **labels},
            "exp_annotations": {"summary": rule["annotations"]["summary"],
                                "description": description}}


PROMTOOL_TESTS: dict[str, Any] = {
    "rule_files": ["rules.yaml"],
    "evaluation_interval": "1m",
    "tests": [
        {"interval": "1m", "input_series": _skew_series(late=True),
         "alert_rule_test": [
             {"eval_time": "5m", "alertname": "CronJobControllerJobCreationSkewHigh",
              "exp_alerts": []},
             {"eval_time": "25m", "alertname": "CronJobControllerJobCreationSkewHigh",
              "exp_alerts": [_fires("CronJobControllerJobCreationSkewHigh",
                                    "p99 of Job creation skew is 1m 3s: the leader is "
                                    "overloaded, throttled by the apiserver, or its clock is "
                                    "off.")]}]},
        {"interval": "1m", "input_series": _skew_series(late=False),
         "alert_rule_test": [
             {"eval_time": "25m", "alertname": "CronJobControllerJobCreationSkewHigh",
              "exp_alerts": []}]},
        {"interval": "1m", "input_series": [
            {"series": f'controller_runtime_reconcile_errors_total{{{_SEL},controller="cronjob"}}',
             "values": "0+60x40"},
            {"series": f'controller_runtime_reconcile_errors_total{{{_SEL},controller="quiet"}}',
             "values": "0+1x40"}],
         "alert_rule_test": [
             {"eval_time": "10m", "alertname": "CronJobControllerReconcileErrors",
              "exp_alerts": []},
             {"eval_time": "25m", "alertname": "CronJobControllerReconcileErrors",
              "exp_alerts": [_fires("CronJobControllerReconcileErrors",
                                    "Controller cronjob fails 1 reconciles/s; see the pods' "
                                    "logs and the CronJobs' events.",
                                    controller="cronjob")]}]},
        {"interval": "1m", "input_series": [
            {"series": f'leader_election_master_status{{{_SEL},name="pyctrl-cronjob-controller",'
                       'pod="a"}', "values": "1x10 0x30"},
            {"series": f'leader_election_master_status{{{_SEL},name="pyctrl-cronjob-controller",'
                       'pod="b"}', "values": "0x40"}],
         "alert_rule_test": [
             {"eval_time": "9m", "alertname": "CronJobControllerNoLeader", "exp_alerts": []},
             {"eval_time": "13m", "alertname": "CronJobControllerNoLeader", "exp_alerts": []},
             {"eval_time": "17m", "alertname": "CronJobControllerNoLeader",
              "exp_alerts": [_fires("CronJobControllerNoLeader", _NO_LEADER)]}]},
        # Not scraped at all: nobody is known to lead, which is just as bad.
        {"interval": "1m", "input_series": [{"series": "up", "values": "1x20"}],
         "alert_rule_test": [
             {"eval_time": "10m", "alertname": "CronJobControllerNoLeader",
              "exp_alerts": [_fires("CronJobControllerNoLeader", _NO_LEADER)]}]},
    ],
}


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool not installed (Debian package: prometheus)")
def test_alert_rules_pass_promtool_check_and_unit_tests(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(_rules_file()))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(PROMTOOL_TESTS))
    for argv in (["promtool", "check", "rules", "rules.yaml"],
                 ["promtool", "test", "rules", "tests.yaml"]):
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                              check=False)
        assert done.returncode == 0, done.stdout + done.stderr


# -- kubectl kustomize ----------------------------------------------------------------------
@pytest.mark.skipif(_kubectl() is None,
                    reason="no kubectl (bash hack/controlplane/build.sh builds one)")
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_kubectl_kustomize_renders_each_overlay_to_its_objects(overlay: str) -> None:
    kubectl = _kubectl()
    assert kubectl is not None
    done = subprocess.run([kubectl, "kustomize", str(MANIFESTS / overlay)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    rendered = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(done.stdout)
                if d}
    assert set(rendered) == EXPECTED[overlay]
    assert rendered == compose(overlay)  # the static checks above saw what kubectl applies


# -- Dockerfile -----------------------------------------------------------------------------
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
    objects: Objects,
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
    assert {"prometheus-client", "structlog", "tzdata", "orjson"} <= pinned
    assert not {"kubernetes", "croniter"} & pinned  # an extra and a test oracle


def test_crd_names_and_printer_columns() -> None:
    crd = _docs(ROOT / "crds" / "cronjobs.batch.pyctrl.io.yaml")[0]
    names = crd["spec"]["names"]
    assert crd["metadata"]["name"] == "cronjobs.batch.pyctrl.io"
    assert names["shortNames"] == ["pcj"] and names["categories"] == ["pyctrl"]
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    columns = [c["name"].upper() for c in version["additionalPrinterColumns"]]
    assert columns == ["SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "NEXT",
                       "READY", "REASON", "AGE"]
