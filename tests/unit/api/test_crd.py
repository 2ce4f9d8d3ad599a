"""pyctrl.api.crd and ``python -m pyctrl gen crd``: CRD shape, versions, determinism, --check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import pytest
import yaml

from pyctrl import api
from pyctrl.api import SchemaError, crd, crds, to_yaml
from pyctrl.cli import main
from tests.unit.api.sample_kinds import Cluster, Website, WebsiteV1alpha1

MODULE = "tests.unit.api.sample_kinds"


def website() -> dict[str, Any]:
    return crd([WebsiteV1alpha1, Website])


def test_names_scope_short_names_and_categories() -> None:
    doc = website()
    assert doc["metadata"]["name"] == "websites.web.pyctrl.io"
    assert doc["spec"]["group"] == "web.pyctrl.io"
    assert doc["spec"]["scope"] == "Namespaced"
    assert doc["spec"]["names"] == {"kind": "Website", "listKind": "WebsiteList",
                                    "plural": "websites", "singular": "website",
                                    "shortNames": ["ws"], "categories": ["pyctrl", "web"]}
    assert crd([Cluster])["spec"]["scope"] == "Cluster"


def test_versions_in_order_with_one_storage_version() -> None:
    versions = website()["spec"]["versions"]
    assert [(v["name"], v["served"], v["storage"]) for v in versions] == [
        ("v1alpha1", True, False), ("v1", True, True)]
    assert versions[0]["deprecated"] is True
    assert "deprecated" in versions[0]["deprecationWarning"]
    schema = versions[0]["schema"]["openAPIV3Schema"]
    assert "maxReplicas" not in schema["properties"]["spec"]["properties"]
    assert "maxReplicas" in versions[1]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"]


def test_two_storage_versions_or_none_are_refused() -> None:
    with pytest.raises(SchemaError, match="exactly one version must be the storage"):
        crd([Website, api.kind("web.pyctrl.io/v2", "Website", short_names=("ws",),
                               categories=("pyctrl", "web"), conversion=Website.__kind__
                               .conversion)(type("W2", (Website,), {}))])
    with pytest.raises(SchemaError, match="found none"):
        crd([WebsiteV1alpha1])


def test_versions_must_agree_on_names() -> None:
    other = api.kind("web.pyctrl.io/v2", "Website", storage=False)(type("W3", (Website,), {}))
    with pytest.raises(SchemaError, match="disagrees with v1 on names"):
        crd([Website, other])


def test_subresources_and_printer_columns() -> None:
    v1 = website()["spec"]["versions"][1]
    assert v1["subresources"] == {"status": {}, "scale": {
        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector"}}
    assert v1["additionalPrinterColumns"][2] == {
        "name": "URL", "type": "string", "priority": 1, "jsonPath": ".status.url"}
    assert "subresources" not in crd([Cluster])["spec"]["versions"][0]


def crd_conversion(conversion: api.WebhookConversion) -> Any:
    return conversion.to_schema()


def test_conversion_stanza() -> None:
    assert website()["spec"]["conversion"] == {"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"namespace": "web-system", "name": "web-webhook",
                                     "path": "/convert", "port": 443}},
        "conversionReviewVersions": ["v1"]}}
    assert "conversion" not in crd([Cluster])["spec"]
    with pytest.raises(ValueError, match="exactly one of"):
        api.WebhookConversion()
    url = api.WebhookConversion(url="https://127.0.0.1:9443/convert", ca_bundle="Q0E=")
    assert crd_conversion(url)["webhook"]["clientConfig"] == {
        "url": "https://127.0.0.1:9443/convert", "caBundle": "Q0E="}


def test_root_schema_metadata_rules_and_description() -> None:
    root = website()["spec"]["versions"][1]["schema"]["openAPIV3Schema"]
    assert root["description"] == "A web site."
    assert root["required"] == ["spec"]
    assert root["properties"]["apiVersion"] == {"type": "string"}
    # A rule reading metadata.name makes metadata.name visible to it.
    assert root["properties"]["metadata"] == {"type": "object",
                                              "properties": {"name": {"type": "string"}}}
    assert root["x-kubernetes-validations"] == [
        {"rule": "self.metadata.name.size() <= 40", "message": "name too long"}]
    assert crd([Cluster])["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
        "metadata"] == {"type": "object"}


def test_embedded_pod_template_expands_to_the_kubernetes_schema() -> None:
    spec = website()["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    pod = spec["properties"]["pod"]
    containers = pod["properties"]["spec"]["properties"]["containers"]
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["items"]["required"] == ["name"]
    resources = containers["items"]["properties"]["resources"]["properties"]["limits"]
    assert resources["additionalProperties"]["x-kubernetes-int-or-string"] is True
    assert set(pod["properties"]["metadata"]["properties"]) == {
        "annotations", "finalizers", "labels", "name", "namespace"}


class BadEmbedded(api.Struct):
    x: Annotated[dict[str, object], api.Embedded("io.k8s.api.core.v1.Nope")]


def test_unknown_embedded_definition_is_an_error() -> None:
    with pytest.raises(SchemaError, match=r"x: io.k8s.api.core.v1.Nope is not in the OpenAPI"):
        api.type_schema(BadEmbedded)


def test_yaml_is_deterministic_and_round_trips() -> None:
    text = to_yaml(website(), [MODULE])
    assert text == to_yaml(website(), [MODULE])
    assert text.startswith("# Generated by `python -m pyctrl gen crd` from " + MODULE)
    assert yaml.safe_load(text) == website()
    assert [d["metadata"]["name"] for d in crds([Website, Cluster, WebsiteV1alpha1])] == [
        "clusters.web.pyctrl.io", "websites.web.pyctrl.io"]


def test_not_a_kind_is_refused() -> None:
    with pytest.raises(SchemaError, match=r"not declared with @pyctrl\.api\.kind"):
        crd([api.Object])


# -- the command line ------------------------------------------------------------------------
def test_gen_crd_writes_then_check_passes(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gen", "crd", MODULE, "--out", str(tmp_path)]) == 0
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["clusters.web.pyctrl.io.yaml", "websites.web.pyctrl.io.yaml"]
    written = yaml.safe_load((tmp_path / files[1]).read_text())
    assert [v["name"] for v in written["spec"]["versions"]] == ["v1", "v1alpha1"]  # source order
    assert main(["gen", "crd", MODULE, "--out", str(tmp_path), "--check"]) == 0


def test_gen_crd_check_fails_with_a_diff_when_the_file_differs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = f"{MODULE}:Cluster"
    assert main(["gen", "crd", spec, "--out", str(tmp_path)]) == 0
    path = tmp_path / "clusters.web.pyctrl.io.yaml"
    path.write_text(path.read_text().replace("scope: Cluster", "scope: Namespaced"))
    capsys.readouterr()
    assert main(["gen", "crd", spec, "--out", str(tmp_path), "--check"]) == 1
    out, err = capsys.readouterr()
    assert "-  scope: Namespaced\n+  scope: Cluster" in out
    assert "out of date" in err
    assert "scope: Namespaced" in path.read_text()  # --check writes nothing
    path.unlink()
    assert main(["gen", "crd", spec, "--out", str(tmp_path), "--check"]) == 1


def test_gen_crd_annotates_the_crds_with_a_conversion_webhook(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inject = "cert-manager.io/inject-ca-from=web-system/web-serving-cert"
    argv = ["gen", "crd", MODULE, "--conversion-annotation", inject, "--out", str(tmp_path)]
    assert main(argv) == 0
    website = yaml.safe_load((tmp_path / "websites.web.pyctrl.io.yaml").read_text())
    assert website["spec"]["conversion"]["strategy"] == "Webhook"
    assert website["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "web-system/web-serving-cert"}
    cluster = yaml.safe_load((tmp_path / "clusters.web.pyctrl.io.yaml").read_text())
    assert "conversion" not in cluster["spec"] and "annotations" not in cluster["metadata"]
    assert main([*argv, "--check"]) == 0
    assert main(["gen", "crd", MODULE, "--out", str(tmp_path), "--check"]) == 1
    assert main(["gen", "crd", MODULE, "--conversion-annotation", "no-equals"]) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err


def test_gen_crd_to_stdout_and_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gen", "crd", f"{MODULE}:Cluster"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["spec"]["names"]["kind"] == "Cluster"
    assert main(["gen", "crd", f"{MODULE}:WebsiteSpec"]) == 2
    assert "is not a pyctrl.api.Object" in capsys.readouterr().err
    assert main(["gen", "crd", "no_such_module_xyz"]) == 2
    assert "cannot import" in capsys.readouterr().err
    assert main(["gen", "crd", f"{MODULE}:Cluster", "--check"]) == 2
    assert "--check needs --out" in capsys.readouterr().err


def test_python_dash_m_pyctrl_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "pyctrl", "gen", "crd", f"{MODULE}:Cluster"],
                            capture_output=True, text=True, check=False,
                            cwd=Path(__file__).resolve().parents[3])
    assert result.returncode == 0, result.stderr
    assert "kind: CustomResourceDefinition" in result.stdout


def test_the_framework_guide_example_generates_its_crd(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    guide = (Path(__file__).resolve().parents[3] / "docs" / "FRAMEWORK.md").read_text()
    section = guide[guide.index("### Your own API"):]
    code = section[section.index("```python\n") + 10:section.index("```\n", 10)]
    (tmp_path / "readme_website.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["gen", "crd", "readme_website", "--out", str(tmp_path)]) == 0
    doc = yaml.safe_load((tmp_path / "websites.example.io.yaml").read_text())
    spec = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["host"] and spec["properties"]["replicas"]["default"] == 1
    assert "containers" in json.dumps(spec["properties"]["pod"])
