"""A scaffolded project's config/default, rendered: without a webhook it is the operator alone
(no cert-manager object); ``create webhook`` adds the webhook component, whose Service,
configurations, certificate, Deployment patch and NetworkPolicy agree with each other and
with the project's own server (its flags parsed by its ``build_parser``, its paths from its
``register_webhooks``), checked on the objects a Python kustomize composes (tests/kustomize.py)
and, when a kubectl is found, that ``kubectl kustomize`` and ``make render`` give the same.
A kind with a conversion webhook: its CRD calls the same Service at the path the project's
converter is served at, with the CA injected from the same certificate, and the generated
project's own conversion test passes.

The generators run once per project (``pyctrl gen crd/rbac/webhook`` in subprocesses, as
``create`` runs them): config/crd, config/rbac/role.yaml and config/webhook/manifests.yaml
are theirs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyctrl.cli import main
from pyctrl.cli.scaffold import generate_manifests
from pyctrl.cli.scaffold.project import load
from pyctrl.serving import parse_bind_address
from tests.kustomize import build, kubectl

Objects = dict[tuple[str, str], dict[str, Any]]
NAME, NS = "shop-operator", "shop-operator-system"
BASE = {("Namespace", NS), ("ServiceAccount", f"{NAME}-controller-manager"),
        ("ClusterRole", f"{NAME}-manager"), ("ClusterRoleBinding", f"{NAME}-manager"),
        ("Role", f"{NAME}-manager-leader-election"),
        ("RoleBinding", f"{NAME}-manager-leader-election"),
        ("Deployment", f"{NAME}-controller-manager"), ("Service", f"{NAME}-metrics"),
        ("PodDisruptionBudget", f"{NAME}-controller-manager"),
        ("NetworkPolicy", f"{NAME}-controller-manager")}
WEBHOOK = {("Service", f"{NAME}-webhook-service"), ("Issuer", f"{NAME}-selfsigned-issuer"),
           ("Certificate", f"{NAME}-serving-cert"),
           ("MutatingWebhookConfiguration", NAME), ("ValidatingWebhookConfiguration", NAME)}

# The project's own view of its server: the Deployment's args through its parser, the
# paths its register_webhooks serves.
SERVER = """
import json, sys
from pyctrl.webhook import WebhookServer, WebhookServerOptions
from shop_operator.__main__ import build_parser
from shop_operator.wiring import register_webhooks
args = build_parser().parse_args(sys.argv[1:])
server = WebhookServer(WebhookServerOptions(cert_dir=args.webhook_cert_dir))
register_webhooks(server)
print(json.dumps({"bind": args.webhook_bind_address, "cert_dir": args.webhook_cert_dir,
                  "paths": sorted(server.admission)}))
"""

# Where the project serves the Order conversion: its path, whether register_webhooks took
# that path already (registering it again is refused), and the converter's versions.
CONVERTER = """
from pyctrl.webhook import WebhookServer, WebhookServerOptions
from shop_operator.api.order_conversion import CONVERT_PATH
from shop_operator.webhooks.order_conversion import converter
from shop_operator.wiring import register_webhooks
server = WebhookServer(WebhookServerOptions(cert_dir="/nonexistent"))
register_webhooks(server)
try:
    server.register(CONVERT_PATH, converter())
    taken = "free"
except ValueError:
    taken = "taken"
print(CONVERT_PATH, taken, *converter().api_versions)
"""


def _scaffold(root: Path, *commands: list[str]) -> Path:
    """The project after ``commands``, then its generators once (as ``make manifests``)."""
    assert main(["init", NAME, "--group", "shop", "--dir", str(root), "--no-manifests"]) == 0
    for command in commands:
        assert main([*command, "--dir", str(root), "--no-manifests"]) == 0
    assert generate_manifests(root, load(root)) == []
    return root


def _objects(docs: list[dict[str, Any]]) -> Objects:
    out: Objects = {}
    for doc in docs:
        key = (doc["kind"], doc["metadata"]["name"])
        assert key not in out, key
        out[key] = doc
    return out


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _scaffold(tmp_path_factory.mktemp("plain") / "shop",
                     ["create", "api", "--kind", "Order"])


@pytest.fixture(scope="module")
def hooked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _scaffold(tmp_path_factory.mktemp("hooked") / "shop",
                     ["create", "api", "--kind", "Order"], ["create", "api", "--kind", "Invoice"],
                     ["create", "webhook", "--kind", "Order"],
                     ["create", "webhook", "--kind", "Invoice"],
                     ["create", "api", "--kind", "Order", "--version", "v2"],
                     ["create", "webhook", "--kind", "Order", "--conversion"])


def _container(objects: Objects) -> dict[str, Any]:
    pod = objects[("Deployment", f"{NAME}-controller-manager")]["spec"]["template"]["spec"]
    return dict(pod["containers"][0])


def _ingress_ports(objects: Objects) -> set[str]:
    policy = objects[("NetworkPolicy", f"{NAME}-controller-manager")]["spec"]
    return {str(p["port"]) for rule in policy["ingress"] for p in rule["ports"]}


def test_without_a_webhook_the_overlay_needs_no_cert_manager(plain: Path) -> None:
    objects = _objects(build(plain / "config" / "default", []))
    assert set(objects) == BASE
    assert not any("cert-manager" in json.dumps(obj) for obj in objects.values())
    container = _container(objects)
    assert not any(a.startswith("--webhook") for a in container["args"])
    assert _ingress_ports(objects) == {p["name"] for p in container["ports"]}


def test_the_webhook_component_agrees_with_the_projects_server(hooked: Path) -> None:
    assert "  - ../webhook\n  # +pyctrl:scaffold:components" in (
        hooked / "config" / "default" / "kustomization.yaml").read_text()
    objects = _objects(build(hooked / "config" / "default", []))
    assert set(objects) == BASE | WEBHOOK
    container = _container(objects)
    done = subprocess.run([sys.executable, "-c", SERVER, *container["args"]], cwd=hooked,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    server = json.loads(done.stdout)
    assert server["paths"] == ["/mutate-v1-invoice", "/mutate-v1-order",
                               "/validate-v1-invoice", "/validate-v1-order"]
    bind = parse_bind_address(server["bind"])
    assert bind is not None
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    # Every webhook calls the webhook Service on a port that reaches the server's port.
    paths = []
    cert = objects[("Certificate", f"{NAME}-serving-cert")]
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        config = objects[(kind, NAME)]
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
            f"{NS}/{cert['metadata']['name']}")
        for hook in config["webhooks"]:
            ref = hook["clientConfig"]["service"]
            service = objects[("Service", ref["name"])]
            assert ref["namespace"] == service["metadata"]["namespace"] == NS
            port = next(p for p in service["spec"]["ports"] if p["port"] == ref["port"])
            assert ports[port["targetPort"]] == bind[1]
            assert service["spec"]["selector"] == objects[
                ("Deployment", f"{NAME}-controller-manager")]["spec"]["selector"]["matchLabels"]
            paths.append(ref["path"])
    assert sorted(paths) == server["paths"]
    # The certificate names the Service, and its Secret is mounted where the server reads.
    service_dns = f"{NAME}-webhook-service.{NS}.svc"
    assert service_dns in cert["spec"]["dnsNames"]
    assert cert["spec"]["issuerRef"] == {"kind": "Issuer", "name": f"{NAME}-selfsigned-issuer"}
    pod = objects[("Deployment", f"{NAME}-controller-manager")]["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if "secret" in v)
    assert volume["secret"]["secretName"] == cert["spec"]["secretName"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == volume["name"])
    assert mount["mountPath"] == server["cert_dir"] and mount["readOnly"] is True
    # The API server may call the webhook port; nothing else was opened.
    assert _ingress_ports(objects) == set(ports) == {"metrics", "probes", "webhook"}


@pytest.mark.skipif(kubectl() is None, reason="no kubectl (`pyctrl envtest install` has one)")
@pytest.mark.parametrize("which", ["plain", "hooked"])
def test_kubectl_renders_what_the_checks_saw(which: str, request: pytest.FixtureRequest) -> None:
    root: Path = request.getfixturevalue(which)
    binary = kubectl()
    assert binary is not None
    done = subprocess.run([binary, "kustomize", str(root / "config" / "default")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    rendered = _objects([d for d in yaml.safe_load_all(done.stdout) if d])
    assert rendered == _objects(build(root / "config" / "default", []))
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")}
    done = subprocess.run(["make", "-s", "render", "IMG=registry.example/shop:1.2",
                           f"KUBECTL={binary}"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    deployed = _objects([d for d in yaml.safe_load_all(done.stdout) if d])
    assert set(deployed) == set(rendered)
    assert _container(deployed)["image"] == "registry.example/shop:1.2"


def test_the_conversion_webhook_is_served_where_the_crd_calls_it(hooked: Path) -> None:
    objects = _objects(build(hooked / "config" / "default", []))
    crd = yaml.safe_load((hooked / "config" / "crd" / "orders.shop.example.com.yaml").read_text())
    assert [(v["name"], v["storage"]) for v in crd["spec"]["versions"]] == [
        ("v1", True), ("v2", False)]
    conversion = crd["spec"]["conversion"]
    assert conversion["strategy"] == "Webhook"
    ref = conversion["webhook"]["clientConfig"]["service"]
    service = objects[("Service", ref["name"])]
    assert ref["namespace"] == service["metadata"]["namespace"]
    assert ref["port"] in [p["port"] for p in service["spec"]["ports"]]
    assert crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
        f"{NS}/{NAME}-serving-cert")
    invoices = yaml.safe_load(
        (hooked / "config" / "crd" / "invoices.shop.example.com.yaml").read_text())
    assert "conversion" not in invoices["spec"] and "annotations" not in invoices["metadata"]
    served = subprocess.run([sys.executable, "-c", CONVERTER], cwd=hooked, capture_output=True,
                            text=True, timeout=60, check=False)
    assert served.returncode == 0, served.stderr
    assert served.stdout.split() == [ref["path"], "taken", "shop.example.com/v1",
                                     "shop.example.com/v2"]
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "tests/unit/test_order_conversion.py"], cwd=hooked,
                           capture_output=True, text=True, timeout=120, check=False)
    assert tests.returncode == 0 and "2 passed" in tests.stdout, tests.stdout + tests.stderr
