"""pyctrl init / create api / create webhook: what is written, what is kept when it runs
again (the user's changes survive), and the refusals (one line, exit 2, nothing written).

``--no-manifests`` throughout: the generators run in a subprocess on the project's code,
which tests/integration/test_scaffold.py covers from the built wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyctrl._version import __version__
from pyctrl.cli import main
from pyctrl.cli.scaffold.project import load


def _init(tmp_path: Path, *extra: str) -> Path:
    assert main(["init", "shop-operator", "--group", "shop", "--dir",
                 str(tmp_path / "shop"), "--no-manifests", *extra]) == 0
    return tmp_path / "shop"


def _create(root: Path, what: str, kind: str, *extra: str) -> int:
    return main(["create", what, "--kind", kind, "--dir", str(root), "--no-manifests", *extra])


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_init_writes_a_project_pinned_to_this_pyctrl(tmp_path: Path) -> None:
    root = _init(tmp_path)
    files = _tree(root)
    assert {"pyproject.toml", "Makefile", "Dockerfile", "README.md", "PROJECT",
            "hack/ci.sh", "hack/deploy.sh", "shop_operator/__main__.py",
            "shop_operator/wiring.py", "shop_operator/py.typed",
            "tests/integration/conftest.py", "config/default/kustomization.yaml",
            "config/manager/manager.yaml", "config/manager/networkpolicy.yaml",
            "config/manager/pdb.yaml", "config/manager/namespace.yaml"} <= set(files)
    assert f'dependencies = ["pyctrl-k8s=={__version__}"]' in files["pyproject.toml"]
    assert "pod-security.kubernetes.io/enforce: restricted" in files[
        "config/manager/namespace.yaml"]
    assert "readOnlyRootFilesystem: true" in files["config/manager/manager.yaml"]
    assert "USER 65532:65532" in files["Dockerfile"]
    assert not any("{{" in text for text in files.values())
    assert (root / "hack" / "deploy.sh").stat().st_mode & 0o111
    assert load(root).api_group == "shop.example.com"


def test_create_api_adds_the_kind_its_controller_and_its_wiring(tmp_path: Path) -> None:
    root = _init(tmp_path)
    assert _create(root, "api", "Order", "--version", "v1beta1") == 0
    files = _tree(root)
    assert {"shop_operator/api/v1beta1/order.py", "shop_operator/controllers/order.py",
            "tests/unit/test_order.py", "tests/integration/test_order.py",
            "config/samples/v1beta1_order.yaml"} <= set(files)
    assert '@api.kind(\n    "shop.example.com/v1beta1", "Order",\n' in files[
        "shop_operator/api/v1beta1/order.py"]
    wiring = files["shop_operator/wiring.py"]
    assert "from shop_operator.controllers.order import setup as setup_order\n" in wiring
    assert "    setup_order(manager)\n    # +pyctrl:scaffold:setup" in wiring
    assert "API_MODULES += shop_operator.api.v1beta1.order\n" in files["Makefile"]
    assert [(r.kind, r.version) for r in load(root).resources] == [("Order", "v1beta1")]


def test_scaffolding_again_keeps_the_users_changes(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    root = _init(tmp_path)
    assert _create(root, "api", "Order") == 0
    controller = root / "shop_operator" / "controllers" / "order.py"
    readme = root / "README.md"
    controller.write_text(controller.read_text() + "\n# my change\n")
    readme.write_text("# mine\n")
    wiring = root / "shop_operator" / "wiring.py"
    wiring.write_text(wiring.read_text().replace("import pyctrl\n", "import pyctrl\n# mine\n"))
    capsys.readouterr()
    _init(tmp_path)  # init again
    assert "kept README.md" in capsys.readouterr().out
    assert _create(root, "api", "Invoice") == 0  # another kind: inserts into shared files
    assert _create(root, "webhook", "Order") == 0
    assert controller.read_text().endswith("\n# my change\n")
    assert readme.read_text() == "# mine\n"
    text = wiring.read_text()
    assert "import pyctrl\n# mine\n" in text
    assert text.count("setup_order(manager)") == 1
    assert "setup_invoice(manager)" in text and "register_order(server)" in text
    assert [(r.kind, r.webhook) for r in load(root).resources] == [
        ("Order", True), ("Invoice", False)]


def test_refusals_are_one_line_and_write_nothing(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = _init(tmp_path)
    assert _create(root, "api", "Order") == 0
    before = _tree(root)
    capsys.readouterr()
    assert _create(root, "api", "Order") == 2
    assert "kind Order is in" in capsys.readouterr().err
    assert _create(root, "webhook", "Invoice") == 2
    assert "pyctrl create api --kind Invoice" in capsys.readouterr().err
    assert _create(root, "api", "order") == 2
    assert "CamelCase" in capsys.readouterr().err
    wiring = root / "shop_operator" / "wiring.py"
    wiring.write_text(wiring.read_text().replace("    # +pyctrl:scaffold:setup\n", ""))
    before["shop_operator/wiring.py"] = wiring.read_text()
    assert _create(root, "api", "Invoice") == 2
    err = capsys.readouterr().err
    assert "shop_operator/wiring.py: no '# +pyctrl:scaffold:setup' marker line" in err
    assert _tree(root) == before
    assert main(["init", "other", "--group", "x", "--dir", str(root), "--no-manifests"]) == 2
    assert "already the project 'shop-operator'" in capsys.readouterr().err
    assert main(["create", "api", "--kind", "A", "--dir", str(tmp_path)]) == 2
    assert "no PROJECT file" in capsys.readouterr().err
    assert main(["init", "Bad_Name", "--group", "x", "--dir", str(tmp_path / "b")]) == 2
    assert not (tmp_path / "b").exists()


def test_force_rewrites_the_scaffolds_files(tmp_path: Path) -> None:
    root = _init(tmp_path)
    (root / "README.md").write_text("# mine\n")
    _init(tmp_path, "--force")
    assert (root / "README.md").read_text().startswith("# shop-operator\n")


def test_another_version_and_its_conversion_webhook(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    root = _init(tmp_path)
    assert _create(root, "api", "Order") == 0
    capsys.readouterr()
    assert _create(root, "webhook", "Order", "--conversion") == 2
    assert "`pyctrl create api --kind Order --version v2` first" in capsys.readouterr().err
    assert _create(root, "api", "Order", "--version", "v2") == 0
    files = _tree(root)
    v2 = files["shop_operator/api/v2/order.py"]
    assert '    "shop.example.com/v2", "Order", storage=False,\n' in v2
    assert "conversion=" not in v2  # no conversion yet: the CRD says strategy None
    assert "API_MODULES += shop_operator.api.v2.order\n" in files["Makefile"]
    assert not any("v2" in path for path in files if "api/v2/" not in path)  # no sample
    assert load(root).resources[0].versions == ("v1", "v2")
    assert _create(root, "webhook", "Order", "--conversion") == 0
    assert _create(root, "api", "Order", "--version", "v3") == 0
    files = _tree(root)
    for version in ("v1", "v2", "v3"):
        module = files[f"shop_operator/api/{version}/order.py"]
        assert "from shop_operator.api.order_conversion import CONVERSION\n" in module
        assert ("    conversion=CONVERSION,\n    # +pyctrl:scaffold:kind-options" in module)
    converter = files["shop_operator/webhooks/order_conversion.py"]
    assert ("    add_spoke(conversion, v2.Order)\n    add_spoke(conversion, v3.Order)\n"
            "    # +pyctrl:scaffold:spokes") in converter
    assert "from shop_operator.api.v3 import order as v3\n" in converter
    assert "    register_order_conversion(server)\n" in files["shop_operator/wiring.py"]
    assert "register_order(server)" in files["shop_operator/wiring.py"]  # admission too
    assert "tests/unit/test_order_conversion.py" in files
    [order] = load(root).resources
    assert (order.versions, order.webhook, order.conversion) == (("v1", "v2", "v3"), True, True)
    capsys.readouterr()
    assert _create(root, "webhook", "Order", "--conversion") == 2
    assert "has its webhooks already" in capsys.readouterr().err
    assert _create(root, "api", "Order", "--version", "v2") == 2
    assert "--version VERSION adds another version" in capsys.readouterr().err


def test_force_on_a_converted_kind_keeps_its_versions_declaring_the_conversion(
        tmp_path: Path) -> None:
    root = _init(tmp_path)
    assert _create(root, "api", "Order") == 0
    assert _create(root, "api", "Order", "--version", "v2") == 0
    assert _create(root, "webhook", "Order", "--conversion") == 0
    controller = (root / "shop_operator" / "controllers" / "order.py").read_text()
    for version in ("v1", "v2"):
        assert _create(root, "api", "Order", "--version", version, "--force") == 0
        module = (root / "shop_operator" / "api" / version / "order.py").read_text()
        assert module.count("    conversion=CONVERSION,\n") == 1
    assert (root / "shop_operator" / "controllers" / "order.py").read_text() == controller
    assert not (root / "config" / "samples" / "v2_order.yaml").exists()
    [order] = load(root).resources
    assert (order.versions, order.conversion) == (("v1", "v2"), True)
