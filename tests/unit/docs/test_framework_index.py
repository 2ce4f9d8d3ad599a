"""docs/FRAMEWORK.md's reverse lookup through a Builder index, run as written: the block's
``setup(manager)`` wires a Manager on a FakeClient; a ConfigMap change reconciles exactly the
Backups naming it (found through ``by_index``), and the reconciler, typed against
``pyctrl.Lister``, also runs on ``synced_lister``s."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyctrl import CONFIGMAPS, Manager, ManagerOptions, MetricsOptions, Request, TypedClient
from pyctrl.api import resource_for
from pyctrl.models.core_v1 import ConfigMap
from pyctrl.testing import FakeClient, FakeClock, synced_lister
from tests.docblocks import doc_module, python_blocks
from tests.threads import running_manager
from tests.waiting import eventually

DOC = Path(__file__).resolve().parents[3] / "docs" / "FRAMEWORK.md"
HEADING = "### The reverse lookup: an index on the Builder"


@pytest.fixture
def client() -> FakeClient:
    return FakeClient(FakeClock())


@pytest.fixture
def manager(client: FakeClient) -> Manager:
    return Manager(client, ManagerOptions(metrics=MetricsOptions(runtime_metrics=False)),
                   clock=FakeClock())


@pytest.fixture
def example() -> Iterator[Any]:
    text = DOC.read_text(encoding="utf-8")
    code = python_blocks(text[text.index(HEADING):])[0]
    with doc_module(code, DOC, "framework_index_example") as module:
        yield module


def _seed(client: FakeClient, example: Any) -> None:
    for name, source in (("b1", "cm-a"), ("b2", "cm-a"), ("b3", "cm-b")):
        client.create(resource_for(example.Backup), {
            "apiVersion": "example.io/v1", "kind": "Backup",
            "metadata": {"name": name, "namespace": "ns"}, "spec": {"source": source}})
    for name in ("cm-a", "cm-b"):
        client.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": "ns"},
                                   "data": {"k": "v"}})


def _copied(client: FakeClient, example: Any) -> dict[str, str]:
    return {b["metadata"]["name"]: (b.get("status") or {}).get("copied", "")
            for b in client.list_objects(resource_for(example.Backup))}


def _rv(client: FakeClient, name: str) -> str:
    return str(client.get(CONFIGMAPS, name, "ns")["metadata"]["resourceVersion"])


def test_a_configmap_change_reconciles_the_backups_naming_it(
        example: Any, client: FakeClient, manager: Manager) -> None:
    _seed(client, example)
    example.setup(manager)
    with running_manager(manager):
        eventually(lambda: _copied(client, example) == {
            "b1": _rv(client, "cm-a"), "b2": _rv(client, "cm-a"), "b3": _rv(client, "cm-b")},
            what="every Backup copied its source")
        before = _copied(client, example)["b3"]
        cm = client.get(CONFIGMAPS, "cm-a", "ns")
        client.update(CONFIGMAPS, {**cm, "data": {"k": "changed"}}, "ns")
        changed = _rv(client, "cm-a")
        eventually(lambda: _copied(client, example) == {
            "b1": changed, "b2": changed, "b3": before},
            what="the Backups naming cm-a, found by the index, copied it again")


def test_the_reconciler_runs_on_synced_listers(example: Any, client: FakeClient) -> None:
    _seed(client, example)
    backups = synced_lister(client, example.Backup,
                            indexers={example.BY_SOURCE: example.source_key})
    assert {b.metadata.name for b in backups.by_index(example.BY_SOURCE, "ns/cm-a")} == {
        "b1", "b2"}
    reconcile = example.reconciler(backups, synced_lister(client, ConfigMap),
                                   TypedClient(client))
    reconcile(Request("ns", "b3"))
    assert _copied(client, example)["b3"] == _rv(client, "cm-b")
    reconcile(Request("ns", "missing"))  # NotFound: nothing to do
