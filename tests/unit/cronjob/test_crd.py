"""crds/cronjobs.batch.pyctrl.io.yaml is generated from cronjob_controller.crd (gen crd --check),
the one declaration of the CronJob's shape; the defaults and bounds the rest of the package
uses are the ones the schema publishes."""

from __future__ import annotations

from pathlib import Path

import pytest

from cronjob_controller import crd as types
from cronjob_controller.api import CRONJOBS, DEFAULTS, MAX_NAME_LENGTH
from pyctrl import api
from pyctrl.cli import main

ROOT = Path(__file__).resolve().parents[3]


def test_committed_crd_is_what_the_types_generate(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["gen", "crd", "cronjob_controller.crd", "--out", str(ROOT / "crds"),
                   "--check"])
    out, err = capsys.readouterr()
    assert status == 0, out + err


def test_schema_defaults_are_the_webhooks_defaults() -> None:
    spec = api.crd([types.CronJob])["spec"]["versions"][0]["schema"]["openAPIV3Schema"][
        "properties"]["spec"]["properties"]
    published = {name: node["default"] for name, node in spec.items() if "default" in node}
    assert published == dict(DEFAULTS) == {
        "concurrencyPolicy": "Allow", "suspend": False, "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 1}


def test_name_rule_uses_the_validation_bound() -> None:
    (rule,) = types.CronJob.__kind__.rules
    assert rule.rule == f"self.metadata.name.size() <= {MAX_NAME_LENGTH}"


def test_a_cached_cronjob_decodes_into_the_crd_types() -> None:
    raw = {"apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
           "metadata": {"name": "c", "namespace": "ns"},
           "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": {}}}},
           "status": {"active": [{"name": "c-1", "kind": "Job"}], "activeCount": 1}}
    cj = api.decode(types.CronJob, raw)
    assert cj.spec.concurrency_policy == "Allow"
    assert cj.status.active is not None and cj.status.active[0].name == "c-1"
    assert api.resource_for(types.CronJob) == CRONJOBS
    assert (CRONJOBS.group, CRONJOBS.version, CRONJOBS.plural, CRONJOBS.kind) == (
        "batch.pyctrl.io", "v1", "cronjobs", "CronJob")


def test_an_absent_active_list_differs_from_an_empty_one() -> None:
    # The status write fills in "active: []" only along with a write that happens anyway,
    # and so must know whether the stored status has the field at all.
    base = {"metadata": {"name": "c"}, "spec": {"schedule": "@daily", "jobTemplate": {}}}
    assert api.decode(types.CronJob, base).status.active is None
    empty = api.decode(types.CronJob, {**base, "status": {"active": []}})
    assert empty.status.active == [] and api.encode(empty.status) == {"active": []}
