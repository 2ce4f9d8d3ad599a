"""pyctrl.kube.meta.controller_of: the one walk over ownerReferences, and its users."""

from __future__ import annotations

from typing import Any

import pytest

from cronjob_controller import jobs
from pyctrl import Request, ownerrefs
from pyctrl.cache import controller_uid_index_func
from pyctrl.handlers import enqueue_owner
from pyctrl.kube.meta import controller_of

OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1",
         "controller": True}
OTHER = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u2"}


def _with(refs: Any) -> dict[str, Any]:
    return {"metadata": {"name": "x", "ownerReferences": refs}}


def test_returns_the_controller_reference_itself() -> None:
    obj = _with([OTHER, OWNER])
    assert controller_of(obj) is obj["metadata"]["ownerReferences"][1]


def test_first_controller_wins() -> None:
    second = {**OWNER, "uid": "u3"}
    assert controller_of(_with([OWNER, second])) is OWNER


@pytest.mark.parametrize("obj", [
    {},
    {"metadata": None},
    {"metadata": "nonsense"},
    _with(None),
    _with("nonsense"),
    _with([OTHER]),
    _with([{**OWNER, "controller": False}]),
    _with([{**OWNER, "controller": "true"}]),  # only the JSON boolean counts
    _with(["nonsense", 3, None]),
])
def test_no_controller(obj: dict[str, Any]) -> None:
    assert controller_of(obj) is None


def test_every_user_walks_the_same_way() -> None:
    """The public helper, the cache's controller-UID index, enqueue_owner and the CronJob
    controller agree."""
    assert ownerrefs.controller_of is controller_of
    for obj, uid in [(_with([OTHER, OWNER]), "u1"), (_with([OTHER]), None),
                     (_with(["bad", {**OWNER, "uid": None}]), None)]:
        assert controller_uid_index_func(obj) == ([uid] if uid else [])
        assert jobs.controller_uid_of(obj) == uid


class _Keys:
    def __init__(self) -> None:
        self.keys: list[str] = []

    def add(self, item: Request) -> None:
        self.keys.append(str(item))


def test_enqueue_owner_follows_the_controller_reference() -> None:
    queue = _Keys()
    handler = enqueue_owner(queue, "apps", "ReplicaSet")
    for refs in ([OTHER, OWNER], ["bad"], [{**OWNER, "controller": "yes"}], [OTHER]):
        obj = _with(refs)
        obj["metadata"]["namespace"] = "ns"
        handler.on_add(obj, False)
    assert queue.keys == ["ns/rs"]
