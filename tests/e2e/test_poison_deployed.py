"""A poison CronJob applied to the deployed operator blinds nothing (make e2e; issue 43).

The CRD is made laxer in place for the test (the ``enum`` of ``spec.concurrencyPolicy``
removed from every served version: what an older CRD version or a webhook switched off lets
through), a CronJob with ``concurrencyPolicy: Sometimes`` is stored beside a valid
every-minute one, and the deployed controller (the pod ``make deploy`` started, not an
in-process one) must: keep creating one Job per scheduled time for the valid CronJob; give the
poison one ``Ready=False`` ``InvalidSpec`` naming the field, exactly one Warning Event and no
Job; and, once it is fixed, make it Ready. The strict CRD is applied again at teardown (as
``make deploy`` applies it) and the test checks the enum is back, so later tests see the
schema they were written for.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from tests.e2e.conftest import ROOT, Kubectl
from tests.e2e.test_real_node import SCHEDULED, _cronjob, _jobs, _until
from tests.waiting import pause

pytestmark = [pytest.mark.node, pytest.mark.timeout(600)]

CRD = "cronjobs.batch.pyctrl.io"
FIELD = "spec.concurrencyPolicy"


def _enum_paths(crd: dict[str, Any]) -> list[str]:
    """JSON-pointer paths of the concurrencyPolicy enum in every version that has one."""
    paths = []
    for i, version in enumerate(crd["spec"]["versions"]):
        spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
        if "enum" in spec["properties"].get("concurrencyPolicy", {}):
            paths.append(f"/spec/versions/{i}/schema/openAPIV3Schema/properties/spec"
                         "/properties/concurrencyPolicy/enum")
    return paths


@pytest.fixture
def lax_crd(kubectl: Kubectl) -> Iterator[None]:
    paths = _enum_paths(kubectl.json("get", "crd", CRD))
    assert paths, "the deployed CRD has no concurrencyPolicy enum to relax"
    try:
        kubectl("patch", "crd", CRD, "--type=json", "-p",
                json.dumps([{"op": "remove", "path": p} for p in paths]))
        yield
    finally:
        kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "crds"))
        assert _enum_paths(kubectl.json("get", "crd", CRD)) == paths, "strict CRD not restored"


def _ready(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any] | None:
    obj = kubectl.json("-n", namespace, "get", "cronjobs.batch.pyctrl.io", name)
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return dict(c)
    return None


def _warnings(kubectl: Kubectl, namespace: str, name: str) -> list[dict[str, Any]]:
    events = kubectl.json("-n", namespace, "get", "events",
                          f"--field-selector=involvedObject.name={name},reason=InvalidSpec")
    return [e for e in events["items"] if e.get("type") == "Warning"]


def test_a_poison_cronjob_beside_a_valid_one_on_the_deployed_operator(
        kubectl: Kubectl, namespace: str, lax_crd: None) -> None:
    del lax_crd
    kubectl.apply(namespace, _cronjob("valid", "echo ok"))
    poison = _cronjob("poison", "echo never")
    poison["spec"]["concurrencyPolicy"] = "Sometimes"
    # The relaxed schema reaches every apiserver handler within a moment; retry until stored.
    _until("the poison CronJob stored", 30, lambda: kubectl(
        "-n", namespace, "apply", "-f", "-", input=json.dumps(poison), check=False) or None)

    cond = _until("the poison CronJob Ready=False InvalidSpec", 90, lambda: (
        c if (c := _ready(kubectl, namespace, "poison")) and c.get("reason") == "InvalidSpec"
        else None))
    assert cond["status"] == "False" and FIELD in cond["message"], cond
    assert "Sometimes" in cond["message"], cond

    # The valid CronJob keeps its schedule through two ticks after the poison was stored.
    stored_at = time.time()
    pause(60 - stored_at % 60 + 60 + 20)
    scheduled = sorted(j["metadata"]["annotations"][SCHEDULED]
                       for j in _jobs(kubectl, namespace)
                       if j["metadata"]["name"].startswith("valid-"))
    later = [t for t in scheduled if _epoch(t) > stored_at]
    assert len(later) >= 2 and len(set(scheduled)) == len(scheduled), scheduled
    assert not [j for j in _jobs(kubectl, namespace)
                if j["metadata"]["name"].startswith("poison-")]
    [warning] = _warnings(kubectl, namespace, "poison")
    assert warning.get("count", 1) == 1 and FIELD in warning["message"], warning

    kubectl("-n", namespace, "patch", "cronjobs.batch.pyctrl.io", "poison", "--type=merge",
            "-p", json.dumps({"spec": {"concurrencyPolicy": "Allow"}}))
    _until("the fixed CronJob Ready", 90, lambda: (
        c if (c := _ready(kubectl, namespace, "poison")) and c.get("status") == "True"
        else None))
    _until("the fixed CronJob's first Job", 90, lambda: [
        j for j in _jobs(kubectl, namespace) if j["metadata"]["name"].startswith("poison-")])


def _epoch(rfc3339: str) -> float:
    return datetime.fromisoformat(rfc3339).timestamp()
