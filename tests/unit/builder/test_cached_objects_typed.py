"""Objects from the cache carry apiVersion/kind even when LIST items lack them (as real ones do),
so an Event recorded about a cached object names it completely."""

from __future__ import annotations

import threading

from pyctrl.cache import SharedInformerFactory
from pyctrl.kube.interface import RawObject
from pyctrl.kube.resource import CONFIGMAPS, EVENTS
from pyctrl.record import EventBroadcaster
from pyctrl.testing import Action, FakeClient, FakeClock
from tests.unit.runtime.helpers import eventually


def untyped_list(client: FakeClient) -> object:
    """A LIST reactor answering like kube-apiserver: items without apiVersion/kind."""

    def react(action: Action) -> RawObject:
        items = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")}
                 for o in client.list_objects(CONFIGMAPS, action.namespace)]
        return {"apiVersion": "v1", "kind": "ConfigMapList", "items": items,
                "metadata": {"resourceVersion": client.resource_version}}

    return react


def test_recorder_event_on_a_cached_object_names_its_kind() -> None:
    clock = FakeClock()
    client = FakeClient(clock)
    client.create(CONFIGMAPS, {"metadata": {"name": "listed", "namespace": "ns"}})
    client.prepend_reactor("list", CONFIGMAPS, untyped_list(client))  # type: ignore[arg-type]
    assert "kind" not in client.list(CONFIGMAPS, "ns")["items"][0]
    factory = SharedInformerFactory(client, clock=clock)
    informer = factory.informer_for(CONFIGMAPS)
    lister = factory.lister_for(CONFIGMAPS)
    broadcaster = EventBroadcaster(client, component="test", clock=clock, retry_backoff=0.0)
    stop = threading.Event()
    factory.start(stop)
    try:
        eventually(informer.has_synced, what="cache synced")
        cached = lister.get("ns", "listed")
        assert (cached["apiVersion"], cached["kind"]) == ("v1", "ConfigMap")
        broadcaster.new_recorder().event(cached, "Normal", "Seen", "from the cache")
        assert broadcaster.wait_idle()
        [event] = client.list_objects(EVENTS, "ns")
        ref = event["involvedObject"]
        assert (ref["apiVersion"], ref["kind"], ref["name"]) == ("v1", "ConfigMap", "listed")
    finally:
        stop.set()
        factory.shutdown()
        broadcaster.shutdown()
