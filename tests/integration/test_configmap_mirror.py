"""examples/configmap_mirror end to end: a real kube-apiserver and its garbage collector."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from examples.configmap_mirror import setup
from pyctrl import CONFIGMAPS, EVENTS, SECRETS, Manager, ManagerOptions, NotFound, retry_on_conflict
from tests.threads import running_manager
from tests.waiting import poll

pytestmark = pytest.mark.integration

LABELS = {"pyctrl.io/mirror": "true"}


@pytest.fixture
def manager(client: Any, namespace: str) -> Iterator[Manager]:
    mgr = Manager(client, ManagerOptions(namespace=namespace, graceful_shutdown_timeout=10))
    setup(mgr)
    with running_manager(mgr, name="mirror-manager", join_timeout=30):
        yield mgr


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret_data(client: Any, namespace: str, name: str) -> dict[str, str] | None:
    try:
        data: dict[str, str] = client.get(SECRETS, name, namespace).get("data") or {}
    except NotFound:
        return None
    return data


def test_labelled_configmap_is_mirrored_updated_and_collected(
    client: Any, namespace: str, manager: Manager
) -> None:
    cm = client.create(CONFIGMAPS, {"metadata": {"name": "settings", "labels": LABELS},
                                    "data": {"color": "blue", "size": "L"}}, namespace)
    assert poll(lambda: secret_data(client, namespace, "settings") == {
        "color": b64("blue"), "size": b64("L")}, timeout=20)
    [ref] = client.get(SECRETS, "settings", namespace)["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
        "ConfigMap", "settings", cm["metadata"]["uid"], True)

    def change() -> Any:
        current = client.get(CONFIGMAPS, "settings", namespace)
        current["data"] = {"color": "red"}
        return client.update(CONFIGMAPS, current, namespace)

    retry_on_conflict(change)
    assert poll(lambda: secret_data(client, namespace, "settings") == {"color": b64("red")},
                timeout=20)

    # Someone deletes the Secret: the owned-object watch brings it back.
    client.delete(SECRETS, "settings", namespace)
    assert poll(lambda: secret_data(client, namespace, "settings") == {"color": b64("red")},
                timeout=20)

    client.delete(CONFIGMAPS, "settings", namespace)
    assert poll(lambda: secret_data(client, namespace, "settings") is None, timeout=60), (
        "kube-controller-manager's garbage collector did not delete the Secret")


def test_unlabelled_configmaps_and_foreign_secrets_are_left_alone(
    client: Any, namespace: str, manager: Manager
) -> None:
    client.create(SECRETS, {"metadata": {"name": "taken"}, "data": {"x": b64("mine")}},
                  namespace)
    client.create(CONFIGMAPS, {"metadata": {"name": "taken", "labels": LABELS},
                               "data": {"x": "theirs"}}, namespace)
    client.create(CONFIGMAPS, {"metadata": {"name": "plain"}, "data": {"a": "b"}}, namespace)
    event = poll(lambda: next((e for e in client.list(EVENTS, namespace)["items"]
                               if e["reason"] == "SecretExists"), None), timeout=20)
    assert event is not None and event["type"] == "Warning"
    assert (event["involvedObject"]["kind"], event["involvedObject"]["name"]) == (
        "ConfigMap", "taken")
    assert secret_data(client, namespace, "taken") == {"x": b64("mine")}
    assert secret_data(client, namespace, "plain") is None
