"""The examples write through the fenced client when leader election is on (issue 24 item 8):
a replica that lost its lease must not write from stale state."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from examples.configmap_mirror import Mirror
from examples.configmap_mirror import setup as mirror_setup
from examples.sample_controller import FooReconciler
from examples.sample_controller import setup as foo_setup
from pyctrl import (
    Controller,
    FencedClient,
    LeaderElectionOptions,
    Manager,
    ManagerOptions,
    Request,
)
from pyctrl.cache import RecordingClient
from pyctrl.testing import FakeClient, FakeClock
from pyctrl.testing.fake_lock import FakeLock, FakeLockStore


def _manager(client: FakeClient, *, elect: bool) -> Manager:
    election = LeaderElectionOptions(id="ex", lock=FakeLock(FakeLockStore(), "me")) if elect \
        else None
    return Manager(client, ManagerOptions(leader_election=election), clock=FakeClock())


@pytest.mark.parametrize("setup", [foo_setup, mirror_setup])
def test_examples_write_through_the_fenced_client_only_with_leader_election(
        setup: Callable[[Manager], Controller[Request]]) -> None:
    client = FakeClient()
    for elect in (True, False):
        controller = setup(_manager(client, elect=elect))
        try:
            reconciler = controller.reconciler
            assert isinstance(reconciler, FooReconciler | Mirror)
            writer = reconciler.client.raw  # both write through a TypedClient
            if elect:
                assert isinstance(writer, FencedClient)
                writer = writer.inner
            # recorded for read-your-own-writes, over the manager's client
            assert isinstance(writer, RecordingClient) and writer.inner is client
        finally:
            controller.queue.shut_down()
