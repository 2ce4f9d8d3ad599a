"""jobs.py: names, the Job built from the template, finished/ownership/annotation facts."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from cronjob_controller import jobs
from cronjob_controller.api import SCHEDULED_TIMESTAMP_ANNOTATION, CronJob
from pyctrl import is_controlled_by
from pyctrl.api import decode
from pyctrl.kube import meta
from pyctrl.models.batch_v1 import Job

NY = ZoneInfo("America/New_York")


def raw_cronjob() -> dict[str, Any]:
    return {
        "apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
        "metadata": {"name": "hello", "namespace": "team-a", "uid": "cj-uid",
                     "labels": {"not": "copied"}},
        "spec": {
            "schedule": "0 0 * * *",
            "jobTemplate": {
                "metadata": {
                    "name": "ignored", "generateName": "ignored-",
                    "labels": {"app": "hello"},
                    "annotations": {"note": "x", SCHEDULED_TIMESTAMP_ANNOTATION: "spoofed"},
                },
                "spec": {"backoffLimit": 2, "template": {"spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
            },
        },
    }


def cronjob(raw: dict[str, Any] | None = None) -> CronJob:
    return decode(CronJob, raw or raw_cronjob())


def job(raw: dict[str, Any]) -> Job:
    return decode(Job, raw)


def test_job_name_is_name_dash_unix_minutes() -> None:
    t = datetime(2024, 1, 1, tzinfo=UTC)  # 1704067200 s
    assert jobs.job_name("hello", t) == "hello-28401120"
    assert jobs.job_name("hello", t + timedelta(seconds=59)) == "hello-28401120"
    assert jobs.job_name("hello", t.astimezone(NY)) == "hello-28401120"  # instant, not wall
    with pytest.raises(ValueError, match="naive"):
        jobs.job_name("hello", datetime(2024, 1, 1))


def test_build_job_from_template() -> None:
    raw = raw_cronjob()
    before = copy.deepcopy(raw)
    cj = cronjob(raw)
    scheduled = datetime(2024, 1, 1, 5, 0, tzinfo=UTC)
    built = jobs.build_job(cj, scheduled, NY)
    assert raw == before
    assert cj.spec.job_template == before["spec"]["jobTemplate"]
    assert built == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "hello-28401420",
            "namespace": "team-a",
            "labels": {"app": "hello"},
            "annotations": {"note": "x",
                            SCHEDULED_TIMESTAMP_ANNOTATION: "2024-01-01T00:00:00-05:00"},
            "ownerReferences": [{
                "apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob", "name": "hello",
                "uid": "cj-uid", "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": before["spec"]["jobTemplate"]["spec"],
    }


def test_build_job_shares_nothing_with_the_template() -> None:
    cj = cronjob()
    built: dict[str, Any] = jobs.build_job(cj, datetime(2024, 1, 1, tzinfo=UTC), UTC)
    built["spec"]["template"]["spec"]["containers"][0]["image"] = "changed"
    built["metadata"]["labels"]["app"] = "changed"
    template = cj.spec.job_template
    assert template["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"
    assert template["metadata"]["labels"]["app"] == "hello"


def test_build_job_copies_what_json_cannot_carry_too() -> None:
    """The spec is copied by a JSON round trip; an int past 64 bits (stored past a laxer
    schema) falls back to a deep copy, equal and unshared all the same."""
    raw = raw_cronjob()
    raw["spec"]["jobTemplate"]["spec"]["x-huge"] = {"n": 2**70, "list": [1.5, None, True]}
    cj = cronjob(raw)
    built: dict[str, Any] = jobs.build_job(cj, datetime(2024, 1, 1, tzinfo=UTC), UTC)
    assert built["spec"] == cj.spec.job_template["spec"]
    built["spec"]["x-huge"]["list"].append("changed")
    assert cj.spec.job_template["spec"]["x-huge"]["list"] == [1.5, None, True]


def test_created_job_is_the_answers_metadata() -> None:
    answer = {"apiVersion": "batch/v1", "kind": "Job",
              "metadata": {"name": "hello-1", "namespace": "team-a", "uid": "u-1",
                           "resourceVersion": "42", "labels": {"app": "hello"}},
              "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    created = jobs.created_job(answer)
    md = created.metadata
    assert (md.name, md.namespace, md.uid, md.resource_version) == ("hello-1", "team-a",
                                                                    "u-1", "42")
    assert md.labels == {"app": "hello"} and created.kind == "Job"
    assert created.spec == Job().spec  # not decoded: the informer delivers the whole Job


def test_build_job_without_template_metadata() -> None:
    raw = raw_cronjob()
    del raw["spec"]["jobTemplate"]["metadata"]
    built: dict[str, Any] = jobs.build_job(cronjob(raw), datetime(2024, 1, 1, tzinfo=UTC), UTC)
    assert built["metadata"]["labels"] == {}
    assert built["metadata"]["annotations"] == {
        SCHEDULED_TIMESTAMP_ANNOTATION: "2024-01-01T00:00:00Z"}


def test_scheduled_time_round_trips_through_the_annotation() -> None:
    scheduled = datetime(2024, 3, 10, 7, 0, tzinfo=UTC)
    got = jobs.scheduled_time_of(job(jobs.build_job(cronjob(), scheduled, NY)))
    assert got == scheduled
    assert got is not None and got.tzinfo is UTC


@pytest.mark.parametrize("annotations", [None, {}, {SCHEDULED_TIMESTAMP_ANNOTATION: "x"},
                                         {SCHEDULED_TIMESTAMP_ANNOTATION: "2024-01-01T"}])
def test_scheduled_time_missing_or_bad(annotations: dict[str, str] | None) -> None:
    assert jobs.scheduled_time_of(job({"metadata": {"annotations": annotations or {}}})) is None


def test_scheduled_time_without_an_offset_reads_as_utc() -> None:
    # pyctrl.kube.parse_micro_time, the one metav1 time parser, reads a time without an
    # offset as UTC (the annotation this controller writes always has one).
    annotated = job({"metadata": {"annotations": {
        SCHEDULED_TIMESTAMP_ANNOTATION: "2024-01-01T00:00"}}})
    assert jobs.scheduled_time_of(annotated) == datetime(2024, 1, 1, tzinfo=UTC)


def _job(*conditions: tuple[str, str]) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": t, "status": s} for t, s in conditions]}}


@pytest.mark.parametrize(("raw", "expected"), [
    ({}, (False, None)),
    (_job(), (False, None)),
    (_job(("Complete", "True")), (True, "Complete")),
    (_job(("Failed", "True")), (True, "Failed")),
    (_job(("Complete", "False")), (False, None)),
    (_job(("Suspended", "True")), (False, None)),
    # Interim conditions: pods may still be terminating, so the Job is still active.
    (_job(("SuccessCriteriaMet", "True")), (False, None)),
    (_job(("FailureTarget", "True")), (False, None)),
    (_job(("SuccessCriteriaMet", "True"), ("Complete", "True")), (True, "Complete")),
    (_job(("FailureTarget", "True"), ("Failed", "True")), (True, "Failed")),
])
def test_is_job_finished(raw: dict[str, Any], expected: tuple[bool, str | None]) -> None:
    assert jobs.is_job_finished(job(raw)) == expected


def test_completion_time_of() -> None:
    assert jobs.completion_time_of(job({"status": {"completionTime": "2024-01-01T00:01:02Z"}})
                                   ) == datetime(2024, 1, 1, 0, 1, 2, tzinfo=UTC)
    assert jobs.completion_time_of(job({})) is None


def _owned(*refs: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"ownerReferences": list(refs)}}


@pytest.mark.parametrize(("job", "controlled"), [
    (_owned({"uid": "cj-uid", "controller": True}), True),
    (_owned({"uid": "cj-uid"}), False),  # an owner, but not the controller
    (_owned({"uid": "cj-uid", "controller": False}), False),
    (_owned({"uid": "old-uid", "controller": True}), False),  # a recreated CronJob's old Job
    (_owned({"uid": "x", "controller": False}, {"uid": "cj-uid", "controller": True}), True),
    (_owned(), False),
    ({"metadata": {}}, False),
    ({}, False),
])
def test_is_controlled_by_uid(job: dict[str, Any], controlled: bool) -> None:
    assert is_controlled_by(job, "cj-uid") is controlled


def test_empty_uid_controls_nothing() -> None:
    assert not is_controlled_by(_owned({"uid": "", "controller": True}), "")


def test_built_job_is_controlled_by_its_cronjob() -> None:
    built = job(jobs.build_job(cronjob(), datetime(2024, 1, 1, tzinfo=UTC), UTC))
    assert is_controlled_by(built, "cj-uid")
    ref = meta.controller_ref(built)
    assert ref is not None and ref.uid == "cj-uid"


# -- the scheduled time from the name (no annotation) --------------------------------------


@pytest.mark.parametrize(("name", "expected"), [
    ("hello-29552400", datetime(2026, 3, 10, 12, 0, tzinfo=UTC)),
    ("hello-0", datetime(1970, 1, 1, tzinfo=UTC)),
    ("hello-", None),
    ("hello-abc", None),
    ("hello-12-34", None),
    ("hello-+123", None),
    ("hello-\u0661\u0662", None),  # Arabic-Indic digits are digits, but not ours
    ("hello-99999999999", None),  # beyond datetime's range
    ("other-29552400", None),
    ("hello29552400", None),
])
def test_time_from_name(name: str, expected: datetime | None) -> None:
    assert jobs.time_from_name(name, "hello") == expected


def test_scheduled_time_prefers_the_annotation_over_the_name() -> None:
    annotated = job({"metadata": {"name": "hello-29552400", "annotations": {
        SCHEDULED_TIMESTAMP_ANNOTATION: "2026-03-10T13:00:00+01:00"}}})
    assert jobs.scheduled_time_of(annotated, "hello") == datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def test_scheduled_time_from_the_name_only_when_the_cronjob_name_is_given() -> None:
    named = job({"metadata": {"name": "hello-29552400"}})
    assert jobs.scheduled_time_of(named) is None
    assert jobs.scheduled_time_of(named, "hello") == datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
