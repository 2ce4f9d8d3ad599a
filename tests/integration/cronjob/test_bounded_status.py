"""A 100k-character schedule that got past admission still gets its status written.

The project's CRD refuses such a schedule, so this module runs its own small control plane
(etcd + kube-apiserver, no controller manager) with a *lenient* copy of the CRD: no CEL
rules and no length limit on ``spec.schedule`` (an object created while the webhook and the
limits were not there yet). The controller must still write a status the API
server accepts: Ready=False naming the problem, a message cut to a sane size, and
``observedSchedule`` as a fixed-size digest instead of a copy of the schedule.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from cronjob_controller.api import CRONJOBS
from cronjob_controller.controller import MAX_MESSAGE_LENGTH
from cronjob_controller.status import schedule_digest
from pyctrl import RESTClient
from pyctrl.testing import FakeClock
from pyctrl.testing.envtest import ControlPlane, load_manifests
from tests.integration.cronjob.env import Env, cronjob_body, wait_for

CRD_FILE = Path(__file__).resolve().parents[3] / "crds" / "cronjobs.batch.pyctrl.io.yaml"
HUGE = "0" + ",0" * 50_000 + " * * * *"  # about 100k characters, a valid list


def _drop_cel(node: Any) -> None:
    if isinstance(node, dict):
        node.pop("x-kubernetes-validations", None)
        for value in node.values():
            _drop_cel(value)
    elif isinstance(node, list):
        for item in node:
            _drop_cel(item)


def lenient_crds() -> list[Any]:
    """The project's CronJob CRD without CEL rules and without limits on spec.schedule."""
    crds = [copy.deepcopy(d) for d in load_manifests([CRD_FILE])
            if d.get("kind") == "CustomResourceDefinition"]
    assert crds, f"no CRD in {CRD_FILE}"
    for crd in crds:
        for version in crd["spec"]["versions"]:
            root = version["schema"]["openAPIV3Schema"]
            _drop_cel(root)
            schedule = root["properties"]["spec"]["properties"]["schedule"]
            for limit in ("maxLength", "pattern"):
                schedule.pop(limit, None)
    return crds


@pytest.fixture(scope="module")
def lenient_client() -> Iterator[tuple[ControlPlane, RESTClient]]:
    plane = ControlPlane(controller_manager=False)
    if plane.external:
        pytest.skip("needs its own control plane with a lenient CRD")
    with plane:
        plane.install_crds(lenient_crds())
        client = RESTClient.from_kubeconfig(plane.kubeconfig_path, qps=200, burst=400)
        try:
            yield plane, client
        finally:
            client.close()


@pytest.fixture
def lenient_env(lenient_client: tuple[ControlPlane, RESTClient]) -> Iterator[Env]:
    plane, client = lenient_client
    namespace = f"b-{uuid.uuid4().hex[:8]}"
    plane.kubectl("create", "namespace", namespace)
    env = Env(client, namespace, FakeClock(datetime.now(UTC)))
    try:
        yield env
    finally:
        env.stop_all()
        plane.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def test_huge_schedule_gets_a_bounded_status(lenient_env: Env) -> None:
    env = lenient_env
    env.client.create(CRONJOBS, cronjob_body("huge", HUGE), env.namespace)
    env.start()

    ready = wait_for(lambda: env.condition("huge"), what="a Ready condition")

    status = env.cronjob("huge")["status"]
    assert ready["status"] == "False"
    assert len(ready["message"]) <= MAX_MESSAGE_LENGTH
    assert status["observedSchedule"] == {"digest": schedule_digest(HUGE, "")}
    assert len(orjson.dumps(status)) < 4096
    assert env.jobs() == []
    warnings = [e for e in env.events() if e.get("type") == "Warning"]
    assert warnings and all(len(e["message"]) <= MAX_MESSAGE_LENGTH for e in warnings)
