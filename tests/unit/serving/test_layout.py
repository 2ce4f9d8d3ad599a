"""The serving layer lives in pyctrl.serving; the old module paths are deprecated aliases of
the same objects; envtest's modules do not import each other in a cycle."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import pyctrl.serving

ROOT = Path(__file__).resolve().parents[3]

MOVED = {
    "pyctrl.healthz": ["Checks", "HTTPServerThread", "metrics_handler", "parse_bind_address"],
    "pyctrl.metrics": ["PerRegistry", "per_registry"],
    "pyctrl.metrics_auth": ["MetricsAuth", "TOKEN_REVIEWS", "serving_context"],
    "pyctrl.gcmetrics": ["gc_pause_histogram", "live_sinks", "GC_PAUSE_BUCKETS"],
    "pyctrl.webhook.certs": ["generate_certs", "new_ca", "issue_cert", "CertificatePaths"],
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_module_paths_warn_and_hand_out_the_same_objects(old: str) -> None:
    sys.modules.pop(old, None)  # the warning fires when the alias module is first imported
    with pytest.warns(DeprecationWarning, match="moved to pyctrl.serving"):
        module = importlib.import_module(old)
    for name in MOVED[old]:
        new = (pyctrl.serving.gcmetrics if name == "live_sinks" else pyctrl.serving)
        assert getattr(module, name) is getattr(new, name), name


def test_pyctrl_itself_imports_no_deprecated_alias() -> None:
    """A fresh interpreter importing pyctrl, its serving layer, the webhook package, envtest
    and the CronJob controller sees no DeprecationWarning from pyctrl's own modules."""
    code = ("import pyctrl, pyctrl.serving, pyctrl.webhook, pyctrl.testing.envtest, "
            "cronjob_controller.__main__")
    # Every alias's warning starts "pyctrl.<old module> moved to".
    done = subprocess.run([sys.executable, "-W", "error:pyctrl.:DeprecationWarning", "-c", code],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def _pyctrl_imports(path: Path) -> set[str]:
    """Every pyctrl module ``path`` imports, at module level or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pyctrl"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("pyctrl"))
    return found


@pytest.mark.parametrize("package", ["pyctrl/testing/envtest", "pyctrl/serving"])
def test_modules_of_a_package_import_each_other_without_cycles(package: str) -> None:
    files = {p: ".".join(p.relative_to(ROOT).with_suffix("").parts)
             for p in (ROOT / package).glob("*.py") if p.name != "__init__.py"}
    graph = {mod: {m for m in _pyctrl_imports(p) if m in files.values()}
             for p, mod in files.items()}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph[start]:
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    assert [mod for mod in graph if reaches(mod, mod, {mod})] == []
