"""pyctrl.rbac and ``python -m pyctrl gen rbac``: roles from what controllers declare."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pyctrl import LeaderElectionOptions, Manager, ManagerOptions, MetricsOptions
from pyctrl.cli import main
from pyctrl.kube import CONFIGMAPS, DEPLOYMENTS, SECRETS, SERVICES
from pyctrl.kube.resource import Resource
from pyctrl.rbac import Declarations, PolicyRule, Roles, derive, merge, to_yaml
from pyctrl.reconcile import Request
from pyctrl.testing import FakeClient

ROOT = Path(__file__).resolve().parents[3]
WEBSITES = Resource("example.pyctrl.io", "v1", "websites", "Website")
RBAC_ARGS = ["cronjob_controller.wiring:setup", "--name", "pyctrl-cronjob-controller",
             "--namespace", "pyctrl-system", "--leader-elect", "--metrics-secure",
             "--service-account", "cronjob-controller",
             "--label", "app.kubernetes.io/name=cronjob-controller",
             "--label", "app.kubernetes.io/part-of=pyctrl"]

Grants = set[tuple[str, str, str]]


def grants(rules: list[PolicyRule]) -> Grants:
    return {(g, r, v) for rule in rules for g in rule.api_groups for r in rule.resources
            for v in rule.verbs}


def website_setup(manager: Manager) -> None:
    builder = manager.controller("website").for_(WEBSITES)
    builder.owns(DEPLOYMENTS).owns(SERVICES, writes=("create", "patch"))
    builder.watches(CONFIGMAPS, lambda obj: [Request("ns", "x")])
    builder.lister_for(SECRETS)
    builder.rbac(PolicyRule.of(WEBSITES, "update", "patch", reason="finalizer"))
    manager.event_recorder("website")
    builder.complete(lambda request: None)


def derived(setup: object = website_setup, options: ManagerOptions | None = None) -> Roles:
    declarations = Declarations()
    manager = Manager(FakeClient(), options, declarations=declarations)
    try:
        setup(manager)  # type: ignore[operator]
        return derive(manager, declarations)
    finally:
        declarations.discard()


def test_every_declaration_grants_its_verbs() -> None:
    read = ("get", "list", "watch")
    assert grants(derived().cluster) == {
        *{("example.pyctrl.io", "websites", v) for v in (*read, "update", "patch")},
        *{("example.pyctrl.io", "websites/status", v) for v in ("update", "patch")},
        ("example.pyctrl.io", "websites/finalizers", "update"),
        *{("apps", "deployments", v) for v in (*read, "create", "update", "patch", "delete")},
        *{("", "services", v) for v in (*read, "create", "patch")},  # narrowed by writes=
        *{("", "configmaps", v) for v in read},  # watches
        *{("", "secrets", v) for v in read},  # lister_for of an undeclared resource
        ("", "events", "create"), ("", "events", "patch"),
    }


def test_status_and_finalizers_only_when_they_apply() -> None:
    def plain(manager: Manager) -> None:  # a ConfigMap has no status; nothing owned
        manager.controller("cm").for_(CONFIGMAPS).complete(lambda request: None)

    def no_status(manager: Manager) -> None:
        (manager.controller("w").for_(WEBSITES).rbac(status=False)
         .complete(lambda request: None))

    assert grants(derived(plain).cluster) == {("", "configmaps", v)
                                              for v in ("get", "list", "watch")}
    assert {r for _, r, _ in grants(derived(no_status).cluster)} == {"websites"}


def test_informers_made_directly_and_manager_rules_count() -> None:
    def setup(manager: Manager) -> None:
        manager.informers.lister_for(SECRETS)
        manager.rbac_rule(PolicyRule(("get",), non_resource_urls=("/version",)))

    roles = derived(setup)
    assert grants(roles.cluster) == {("", "secrets", v) for v in ("get", "list", "watch")}
    assert roles.cluster[-1].non_resource_urls == ("/version",)


def test_leader_election_and_secure_metrics_options() -> None:
    roles = derived(options=ManagerOptions(
        leader_election=LeaderElectionOptions(id="w", namespace="sys"),
        metrics=MetricsOptions(secure=True, runtime_metrics=False)))
    assert {("authentication.k8s.io", "tokenreviews", "create"),
            ("authorization.k8s.io", "subjectaccessreviews", "create")} <= grants(roles.cluster)
    assert roles.lease_namespace == "sys"
    assert grants(roles.lease_rules) == {("coordination.k8s.io", "leases", v)
                                         for v in ("get", "create", "update")}


def test_merge_unites_verbs_sorts_rules_and_verbs() -> None:
    rules = merge([PolicyRule(("delete", "get"), ("b",), ("x",)),
                   PolicyRule(("escalate", "list", "get"), ("b",), ("x",)),
                   PolicyRule(("get",), ("a",), ("y",))])
    assert [(r.api_groups, r.resources, r.verbs) for r in rules] == [
        (("a",), ("y",), ("get",)), (("b",), ("x",), ("get", "list", "delete", "escalate"))]


def test_yaml_is_valid_deterministic_and_explains_each_rule() -> None:
    roles = derived()
    text = to_yaml(roles, name="website", labels={"app": "web", "on": "true"})
    assert text == to_yaml(derived(), name="website", labels={"app": "web", "on": "true"})
    (role,) = yaml.safe_load_all(text)
    assert role["kind"] == "ClusterRole" and role["metadata"]["labels"] == {"app": "web",
                                                                            "on": "true"}
    assert grants([PolicyRule(tuple(r["verbs"]), tuple(r["apiGroups"]), tuple(r["resources"]))
                   for r in role["rules"]]) == grants(roles.cluster)
    assert "# controller website: owns" in text


def test_rule_validation() -> None:
    with pytest.raises(ValueError, match="verbs"):
        PolicyRule((), ("",), ("pods",))
    with pytest.raises(ValueError, match="one of them"):
        PolicyRule(("get",), ("",), ("pods",), non_resource_urls=("/x",))
    with pytest.raises(ValueError, match="api_groups"):
        PolicyRule(("get",), resources=("pods",))


def test_manifests_base_rbac_is_generated_from_the_cronjob_builder() -> None:
    # Equal in effect to the hand-written role it replaced (test_deploy_artifacts holds the
    # exact grants; tests/integration/cronjob/test_least_privilege runs the controller on it).
    assert main(["gen", "rbac", *RBAC_ARGS, "--check",
                 str(ROOT / "manifests" / "base" / "rbac.yaml")]) == 0


def test_check_reports_a_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "rbac.yaml"
    stale.write_text((ROOT / "manifests" / "base" / "rbac.yaml").read_text()
                     .replace('"delete"', '"deletecollection"'))
    assert main(["gen", "rbac", *RBAC_ARGS, "--check", str(stale)]) == 1
    out = capsys.readouterr()
    assert '+    verbs: ["get", "list", "watch", "create", "delete"]' in out.out
    assert "out of date" in out.err
    assert main(["gen", "rbac", *RBAC_ARGS, "--out", str(stale)]) == 0
    assert main(["gen", "rbac", *RBAC_ARGS, "--check", str(stale)]) == 0


@pytest.mark.parametrize("spec", ["nosuchmodule:setup", "cronjob_controller.wiring",
                                  "cronjob_controller.wiring:nothing"])
def test_usage_errors_exit_2(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gen", "rbac", spec]) == 2
    assert capsys.readouterr().err.startswith("error: ")
