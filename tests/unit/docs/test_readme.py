"""README.md: what it shows runs. The hello-world controller is executed (on a FakeClient, its
lister standing in for the informer cache) and reconciles a ConfigMap into an owned Secret;
the README stays short (<= 250 lines) and links into the docs that hold the rest."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import pyctrl
from pyctrl import CONFIGMAPS, SECRETS, Manager, Request
from pyctrl.models.core_v1 import ConfigMap
from pyctrl.testing import FakeClient, synced_lister

ROOT = Path(__file__).resolve().parents[3]
README = (ROOT / "README.md").read_text(encoding="utf-8")


FRAMEWORK = (ROOT / "docs" / "FRAMEWORK.md").read_text(encoding="utf-8")


def _first_python(text: str, heading: str) -> str:
    section = text[text.index(heading):]
    start = section.index("```python\n") + 10
    return section[start:section.index("```\n", start)]


def _hello_world() -> str:
    return _first_python(README, "## Hello, controller")


@pytest.mark.parametrize("source", ["README.md", "docs/FRAMEWORK.md"])
def test_hello_world_reconciles_a_configmap_into_an_owned_secret(
        monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    """The README's hello world, and the framework guide's first sketch, as written."""
    code = _hello_world() if source == "README.md" else _first_python(
        FRAMEWORK, "## Writing your own controller")
    client = FakeClient()
    ran: list[Manager] = []
    monkeypatch.setattr(pyctrl.RESTClient, "from_kubeconfig", classmethod(
        lambda cls, *a, **k: client))
    monkeypatch.setattr(pyctrl, "install_signal_handlers", lambda stop: (lambda: None))
    monkeypatch.setattr(Manager, "run", lambda self, stop: ran.append(self))
    built: list[pyctrl.Builder] = []
    controller = Manager.controller

    def recorded(self: Manager, name: str, *, workers: int = 1) -> pyctrl.Builder:
        built.append(controller(self, name, workers=workers))
        return built[-1]

    monkeypatch.setattr(Manager, "controller", recorded)
    namespace: dict[str, Any] = {"__name__": "readme_hello"}
    exec(compile(code, source, "exec"), namespace)
    manager: Manager = namespace["manager"]
    for builder in built:  # Manager.run did not run: release the built controller's queue
        builder.discard()
    assert ran == [manager]
    # The cache the running manager would fill: a lister synced from the fake client.
    namespace["configmaps"] = synced_lister(client, ConfigMap)
    if source != "README.md":  # leader election: writes once leading, as this replica is now
        namespace["client"] = pyctrl.TypedClient(client)
    cm = client.create(CONFIGMAPS, {"metadata": {"name": "cfg", "namespace": "default"},
                                    "data": {"k": "v"}})
    reconcile = namespace["reconcile"]
    assert reconcile(Request("default", "cfg")) is None
    secret = client.get(SECRETS, "cfg", "default")
    assert secret["stringData"] == {"k": "v"}
    assert pyctrl.is_controlled_by(secret, cm)
    assert reconcile(Request("default", "missing")) is None  # NotFound: nothing to do


def test_readme_is_short_and_links_into_the_docs() -> None:
    assert len(README.splitlines()) <= 250
    code = [line for line in _hello_world().splitlines() if line.strip()]
    assert len(code) <= 20, "the hello world grew"
    links = set(re.findall(r"\]\(([^)#\s]+)", README))
    for doc in ("docs/OPERATOR.md", "docs/FRAMEWORK.md", "docs/TUTORIAL.md", "docs/DESIGN.md",
                "docs/DEVELOPMENT.md", "bench/README.md", "CHANGELOG.md"):
        assert doc in links, doc
        assert (ROOT / doc).is_file(), doc
    assert "pip install pyctrl-k8s" in README
