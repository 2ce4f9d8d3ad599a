"""README.md: what it shows runs. The hello-world controller is executed (on a FakeClient, its
lister standing in for the informer cache) and reconciles a ConfigMap into an owned Secret;
the README stays short (<= 250 lines) and links into the docs that hold the rest."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import pyctrl
from pyctrl import CONFIGMAPS, SECRETS, Manager, Object, Request
from pyctrl.testing import FakeClient

ROOT = Path(__file__).resolve().parents[3]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _hello_world() -> str:
    section = README[README.index("## Hello, controller"):]
    return section[section.index("```python\n") + 10:section.index("```\n", 10)]


class _ClientLister:
    """Reads straight from the fake client: the cache the running manager would fill."""

    def __init__(self, client: FakeClient) -> None:
        self.client = client

    def get(self, namespace: str, name: str) -> Object:
        return self.client.get(CONFIGMAPS, name, namespace)


def test_hello_world_reconciles_a_configmap_into_an_owned_secret(
        monkeypatch: pytest.MonkeyPatch) -> None:
    client = FakeClient()
    ran: list[Manager] = []
    monkeypatch.setattr(pyctrl.RESTClient, "from_kubeconfig", classmethod(
        lambda cls, *a, **k: client))
    monkeypatch.setattr(pyctrl, "install_signal_handlers", lambda stop: (lambda: None))
    monkeypatch.setattr(Manager, "run", lambda self, stop: ran.append(self))
    namespace: dict[str, Any] = {"__name__": "readme_hello"}
    exec(compile(_hello_world(), "README.md", "exec"), namespace)
    manager: Manager = namespace["manager"]
    manager.discard()  # Manager.run did not run: release the built controller's queue
    assert ran == [manager]
    namespace["configmaps"] = _ClientLister(client)
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
    assert len(code) <= 22, "the hello world grew"
    links = set(re.findall(r"\]\(([^)#\s]+)", README))
    for doc in ("docs/OPERATOR.md", "docs/FRAMEWORK.md", "docs/TUTORIAL.md", "docs/DESIGN.md",
                "docs/DEVELOPMENT.md", "bench/README.md", "CHANGELOG.md"):
        assert doc in links, doc
        assert (ROOT / doc).is_file(), doc
    assert "pip install pyctrl-k8s" in README
