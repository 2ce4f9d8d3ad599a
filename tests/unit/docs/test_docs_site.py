"""The docs site (mkdocs.yml) has an API reference page for every public module.

`make docs` builds the site strictly (broken links and references fail); this test keeps its
nav in step with what docs/DESIGN.md calls public: the facades
tests/unit/architecture/test_public_api.py checks, plus the modules a controller author imports
by name.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any

import yaml

from tests.unit.architecture.test_public_api import FACADES

ROOT = Path(__file__).resolve().parents[3]

# docs/DESIGN.md "What is public", beyond the facades with an ``__all__`` test of their own.
PUBLIC_BY_NAME = ["pyctrl.manager", "pyctrl.extension", "pyctrl.apply", "pyctrl.ownerrefs",
                  "pyctrl.finalizers", "pyctrl.conditions", "pyctrl.rbac", "pyctrl.models"]


def _reference_modules(nav: Any) -> list[str]:
    if isinstance(nav, str):
        prefix = "reference/"
        return [nav.removeprefix(prefix).removesuffix(".md")] if nav.startswith(prefix) else []
    items = nav.values() if isinstance(nav, dict) else nav
    return [module for item in items for module in _reference_modules(item)]


def test_every_public_module_has_a_reference_page() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = _reference_modules(config["nav"])
    assert len(pages) == len(set(pages)), "a module has two reference pages"
    public = set(FACADES) | set(PUBLIC_BY_NAME)
    assert sorted(public - set(pages)) == [], "public modules without a reference page"
    assert sorted(set(pages) - public) == [], "reference pages of modules that are not public"
    for module in pages:
        importlib.import_module(module)


def test_sphinx_roles_become_optional_links_to_their_resolved_target() -> None:
    """hack/docs/griffe_roles.py: what the reference shows for ``:class:`Name``` in a docstring."""
    import griffe

    path = ROOT / "hack/docs/griffe_roles.py"
    spec = importlib.util.spec_from_file_location("griffe_roles", path)
    assert spec is not None and spec.loader is not None
    roles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(roles)

    reconcile = griffe.load("pyctrl.reconcile", search_paths=[str(ROOT)])
    text = "See :class:`Request`, :meth:`~pyctrl.kube.Client.get` and :func:`!nowhere`."
    assert roles.rewrite_roles(text, reconcile) == (
        'See <autoref identifier="pyctrl.reconcile.Request" optional>`Request`</autoref>, '
        '<autoref identifier="pyctrl.kube.Client.get" optional>`get`</autoref> and `nowhere`.'
    )
    assert roles.rewrite_roles(":mod:`pyctrl.cache`") == "`pyctrl.cache`"
    assert roles.rewrite_roles("Use it so::\n\n    x = 1\n") == "Use it so:\n\n    x = 1\n"
    assert roles.rewrite_roles("a::b") == "a::b"
