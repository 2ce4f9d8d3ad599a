"""The CRD itself, against the real API server: schema rules, CEL, defaults, status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cronjob_controller.api import CRONJOBS
from pyctrl import RESTClient
from pyctrl.errors import Invalid
from pyctrl.testing.envtest import ControlPlane
from tests.integration.cronjob.env import cronjob_body

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


def test_sample_applies_and_defaults_are_filled(control_plane: ControlPlane, namespace: str,
                                                client: RESTClient) -> None:
    control_plane.kubectl("apply", "-n", namespace, "-f",
                          str(ROOT / "manifests" / "samples" / "cronjob.yaml"))
    created = client.create(CRONJOBS, cronjob_body("defaults"), namespace)
    spec = created["spec"]
    assert spec["concurrencyPolicy"] == "Allow"
    assert spec["suspend"] is False
    assert spec["successfulJobsHistoryLimit"] == 3
    assert spec["failedJobsHistoryLimit"] == 1


@pytest.mark.parametrize(("name", "spec", "field"), [
    ("x" * 53, {}, "metadata.name"),
    ("enum", {"concurrencyPolicy": "Sometimes"}, "spec.concurrencyPolicy"),
    ("minimum", {"startingDeadlineSeconds": -1}, "spec.startingDeadlineSeconds"),
    ("limit", {"failedJobsHistoryLimit": -2}, "spec.failedJobsHistoryLimit"),
])
def test_schema_rejects_with_the_field_named(client: RESTClient, namespace: str, name: str,
                                             spec: dict[str, Any], field: str) -> None:
    with pytest.raises(Invalid) as err:
        client.create(CRONJOBS, cronjob_body(name, **spec), namespace)
    assert field in str(err.value) or any(field in c.field for c in err.value.causes)


def test_missing_job_template_is_rejected(client: RESTClient, namespace: str) -> None:
    body = cronjob_body("notemplate")
    del body["spec"]["jobTemplate"]
    with pytest.raises(Invalid):
        client.create(CRONJOBS, body, namespace)


def test_status_subresource_keeps_controller_fields(client: RESTClient, namespace: str) -> None:
    client.create(CRONJOBS, cronjob_body("st"), namespace)
    patched = client.patch(CRONJOBS, "st", {"status": {
        "observedSchedule": {"schedule": "* * * * *", "timeZone": "", "since":
                             "2026-01-01T00:00:00Z"},
        "activeCount": 0, "lastScheduleTime": "2026-01-01T00:00:00Z"}},
        namespace, subresource="status")
    assert patched["status"]["observedSchedule"]["since"] == "2026-01-01T00:00:00Z"
    # A spec write through the main resource can not change status.
    patched["status"]["lastScheduleTime"] = "2020-01-01T00:00:00Z"
    updated = client.update(CRONJOBS, patched, namespace)
    assert updated["status"]["lastScheduleTime"] == "2026-01-01T00:00:00Z"
