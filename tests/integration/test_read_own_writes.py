"""Read your own writes on a real API server: the new user's Backup operator.

A Backup (a kind with a status subresource) owns ``spec.copies`` ConfigMaps; its reconciler,
written as a new user writes it, counts its children through the owned lister's
controller-uid index, applies the next missing one (one step per reconcile) and writes the
count to the status with ``TypedClient.patch_status`` (resourceVersion-locked). The
children's events requeue the Backup before the informer holds the status write just made;
without read-your-own-writes the next status write carried the stale resourceVersion
(Conflict 409 on ~3 of 27 reconciles). With it (the Manager's default), no reconcile conflicts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

import pyctrl
from pyctrl import CONTROLLER_UID_INDEX, Manager, ManagerOptions, Request, api
from pyctrl.api import ObjectMeta
from pyctrl.errors import Conflict
from pyctrl.kube.client import RESTClient
from pyctrl.models.core_v1 import ConfigMap
from pyctrl.testing.envtest import ControlPlane
from tests.threads import running_manager
from tests.waiting import poll

pytestmark = pytest.mark.integration

BACKUPS_N = 10
COPIES = 5


class BackupSpec(api.Struct):
    copies: int = 1


class BackupStatus(api.Struct):
    copied: int = 0


@api.kind("ryow.example.io/v1", "Backup")
class Backup(api.Object):
    spec: BackupSpec = api.field(default_factory=BackupSpec)
    status: BackupStatus = api.field(default_factory=BackupStatus)


BACKUPS = api.resource_for(Backup)


@pytest.fixture(scope="module")
def installed(control_plane: ControlPlane) -> None:
    if control_plane.external:
        pytest.skip("installs a CRD of its own: needs a local control plane")
    control_plane.install_crds([api.crd([Backup])])


class Operator:
    """The Backup operator, counting its reconciles and their Conflicts."""

    def __init__(self, manager: Manager) -> None:
        builder = manager.controller("backup", workers=2).for_(Backup).owns(ConfigMap)
        self.backups = builder.lister_for(Backup)
        self.configmaps = builder.lister_for(ConfigMap)
        self.client = pyctrl.TypedClient(manager.client_for_leader())
        self.lock = threading.Lock()
        self.reconciles = self.conflicts = 0
        builder.complete(self.reconcile)

    def reconcile(self, request: Request) -> None:
        with self.lock:
            self.reconciles += 1
        try:
            self.sync(request)
        except Conflict:
            with self.lock:
                self.conflicts += 1
            raise

    def sync(self, request: Request) -> None:
        try:
            backup = self.backups.get(request.namespace, request.name)
        except pyctrl.NotFound:
            return
        # One step per reconcile: the next missing copy, then the count in the status.
        count = len(self.configmaps.by_index(CONTROLLER_UID_INDEX, backup.metadata.uid))
        if count < backup.spec.copies:
            child = ConfigMap(metadata=ObjectMeta(name=f"{request.name}-{count}",
                                                  namespace=request.namespace),
                              data={"copy": str(count)})
            self.client.apply(pyctrl.set_controller_reference(backup, child),
                              field_manager="backup")
            count += 1
        copied = api.replace(backup.status, copied=count)
        self.client.patch_status(backup, api.replace(backup, status=copied))


@pytest.fixture
def operator(installed: None, client: RESTClient, namespace: str) -> Iterator[Operator]:
    manager = Manager(client, ManagerOptions(namespace=namespace, graceful_shutdown_timeout=10))
    op = Operator(manager)
    with running_manager(manager, name="backup-manager", join_timeout=30):
        yield op


def _all_copied(client: RESTClient, namespace: str) -> bool:
    items = client.list(BACKUPS, namespace)["items"]
    return len(items) == BACKUPS_N and all(
        (b.get("status") or {}).get("copied") == COPIES for b in items)


def test_no_reconcile_conflicts_with_its_own_status_write(
        operator: Operator, client: RESTClient, namespace: str) -> None:
    for i in range(BACKUPS_N):
        client.create(BACKUPS, {"apiVersion": "ryow.example.io/v1", "kind": "Backup",
                                "metadata": {"name": f"backup-{i}"},
                                "spec": {"copies": COPIES}}, namespace)
    assert poll(lambda: _all_copied(client, namespace), timeout=60)
    # The last children's events may still requeue a Backup: let those reconciles finish.
    assert poll(lambda: operator.backups.list(namespace) and all(
        b.status.copied == COPIES for b in operator.backups.list(namespace)), timeout=30)
    with operator.lock:
        reconciles, conflicts = operator.reconciles, operator.conflicts
    print(f"backups={BACKUPS_N} copies={COPIES} reconciles={reconciles} "
          f"conflicts={conflicts}")
    assert reconciles >= BACKUPS_N and conflicts == 0
