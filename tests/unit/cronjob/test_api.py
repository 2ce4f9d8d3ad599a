"""api.py: validation table (raw objects through api.check: parse, then validate), defaulting,
reading a raw CronJob, time formatting, the CRD's agreement."""

from __future__ import annotations

import copy
import zoneinfo
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import yaml

from cronjob_controller import api, validation
from cronjob_controller.api import ErrorType, FieldError
from pyctrl.api import decode
from pyctrl.kube import format_time

CRD = Path(__file__).resolve().parents[3] / "crds" / "cronjobs.batch.pyctrl.io.yaml"


def cronjob(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schedule": "*/5 * * * *",
        "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}},
    }
    base.update(spec)
    return {"apiVersion": api.API_VERSION, "kind": "CronJob",
            "metadata": {"name": "hello", "namespace": "ns", "uid": "u-1"}, "spec": base}


def without(obj: dict[str, Any], *path: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    node = out
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return out


def test_valid_cronjob_has_no_errors() -> None:
    assert api.check(cronjob()) == []
    assert api.check(cronjob(timeZone="Europe/Berlin", startingDeadlineSeconds=0,
                                concurrencyPolicy="Replace", suspend=True,
                                successfulJobsHistoryLimit=0, failedJobsHistoryLimit=0)) == []


@pytest.mark.parametrize(("obj", "field", "etype", "detail"), [
    ({**cronjob(), "metadata": {"name": "x" * 53}}, "metadata.name", ErrorType.INVALID,
     "must be no more than 52 characters"),
    (without(cronjob(), "spec"), "spec", ErrorType.REQUIRED, ""),
    ({**cronjob(), "spec": []}, "spec", ErrorType.INVALID, "must be an object"),
    (without(cronjob(), "spec", "schedule"), "spec.schedule", ErrorType.REQUIRED, ""),
    (cronjob(schedule=""), "spec.schedule", ErrorType.REQUIRED, ""),
    (cronjob(schedule=5), "spec.schedule", ErrorType.INVALID, "must be a string"),
    (cronjob(schedule="61 * * * *"), "spec.schedule", ErrorType.INVALID, "above the maximum 59"),
    (cronjob(schedule="0 0 * * * *"), "spec.schedule", ErrorType.INVALID, "found 6"),
    (cronjob(timeZone="Local"), "spec.timeZone", ErrorType.INVALID, "Local"),
    (cronjob(timeZone="local"), "spec.timeZone", ErrorType.INVALID, "Local"),
    (cronjob(timeZone="TZ=Europe/Berlin"), "spec.timeZone", ErrorType.INVALID, "without TZ="),
    (cronjob(timeZone="CRON_TZ=UTC"), "spec.timeZone", ErrorType.INVALID, "without TZ="),
    (cronjob(timeZone=""), "spec.timeZone", ErrorType.INVALID, "non-empty"),
    (cronjob(timeZone="Mars/Olympus"), "spec.timeZone", ErrorType.INVALID, "unknown time zone"),
    (cronjob(timeZone="../../etc/passwd"), "spec.timeZone", ErrorType.INVALID, "unknown"),
    (cronjob(timeZone="/usr/share/zoneinfo/UTC"), "spec.timeZone", ErrorType.INVALID, "unknown"),
    (cronjob(timeZone=3), "spec.timeZone", ErrorType.INVALID, "must be a string"),
    (cronjob(timeZone="localtime"), "spec.timeZone", ErrorType.INVALID, "canonical IANA"),
    (cronjob(timeZone="posixrules"), "spec.timeZone", ErrorType.INVALID, "canonical IANA"),
    (cronjob(timeZone="Factory"), "spec.timeZone", ErrorType.INVALID, "canonical IANA"),
    (cronjob(timeZone="posix/Europe/Berlin"), "spec.timeZone", ErrorType.INVALID,
     "posix/... and right/... are not allowed"),
    (cronjob(timeZone="right/UTC"), "spec.timeZone", ErrorType.INVALID, "canonical IANA"),
    (cronjob(timeZone="europe/berlin"), "spec.timeZone", ErrorType.INVALID, "unknown"),
    (cronjob(timeZone="E" * 65), "spec.timeZone", ErrorType.TOO_LONG,
     "may not be more than 64 characters"),
    (cronjob(schedule="0 0 30 2 *"), "spec.schedule", ErrorType.INVALID,
     "day 30 never occurs in February"),
    (cronjob(schedule="0 0 31 4 *"), "spec.schedule", ErrorType.INVALID,
     "day 31 never occurs in April"),
    (cronjob(schedule="59 23 31 2 *"), "spec.schedule", ErrorType.INVALID,
     "day 31 never occurs in February"),
    (cronjob(schedule="@every 1s"), "spec.schedule", ErrorType.INVALID, "at least 1m"),
    (cronjob(schedule="@every 0s"), "spec.schedule", ErrorType.INVALID, "at least 1m"),
    (cronjob(schedule="@every -1h"), "spec.schedule", ErrorType.INVALID, "at least 1m"),
    (cronjob(schedule="1," * 600 + " * * * *"), "spec.schedule", ErrorType.TOO_LONG,
     "may not be more than 1024 characters"),
    (cronjob(startingDeadlineSeconds=10**12), "spec.startingDeadlineSeconds",
     ErrorType.INVALID, "less than or equal to 31622400"),
    (cronjob(startingDeadlineSeconds=2**63 - 1), "spec.startingDeadlineSeconds",
     ErrorType.INVALID, "less than or equal to 31622400"),
    (cronjob(successfulJobsHistoryLimit=1001), "spec.successfulJobsHistoryLimit",
     ErrorType.INVALID, "less than or equal to 1000"),
    (cronjob(failedJobsHistoryLimit=2**31 - 1), "spec.failedJobsHistoryLimit",
     ErrorType.INVALID, "less than or equal to 1000"),
    (cronjob(startingDeadlineSeconds=-1), "spec.startingDeadlineSeconds", ErrorType.INVALID,
     "greater than or equal to 0"),
    (cronjob(startingDeadlineSeconds=True), "spec.startingDeadlineSeconds", ErrorType.INVALID,
     "must be an integer"),
    (cronjob(startingDeadlineSeconds="10"), "spec.startingDeadlineSeconds", ErrorType.INVALID,
     "must be an integer"),
    (cronjob(successfulJobsHistoryLimit=-1), "spec.successfulJobsHistoryLimit",
     ErrorType.INVALID, "greater than or equal to 0"),
    (cronjob(failedJobsHistoryLimit=-3), "spec.failedJobsHistoryLimit", ErrorType.INVALID,
     "greater than or equal to 0"),
    (cronjob(concurrencyPolicy="Sometimes"), "spec.concurrencyPolicy", ErrorType.NOT_SUPPORTED,
     'supported values: "Allow", "Forbid", "Replace"'),
    (cronjob(concurrencyPolicy="allow"), "spec.concurrencyPolicy", ErrorType.NOT_SUPPORTED, ""),
    (cronjob(suspend="yes"), "spec.suspend", ErrorType.INVALID, "must be a boolean"),
    (without(cronjob(), "spec", "jobTemplate"), "spec.jobTemplate", ErrorType.REQUIRED, ""),
    (cronjob(jobTemplate=[]), "spec.jobTemplate", ErrorType.INVALID, "must be an object"),
    (cronjob(jobTemplate={}), "spec.jobTemplate.spec", ErrorType.REQUIRED, ""),
    (cronjob(jobTemplate={"spec": "x"}), "spec.jobTemplate.spec", ErrorType.INVALID,
     "must be an object"),
    (cronjob(jobTemplate={"spec": {}, "metadata": {"labels": {"a": 1}}}),
     "spec.jobTemplate.metadata.labels", ErrorType.INVALID, "map of strings"),
    (cronjob(jobTemplate={"spec": {}, "metadata": "x"}), "spec.jobTemplate.metadata",
     ErrorType.INVALID, "must be an object"),
])
def test_validation_reports_field_type_and_detail(
    obj: dict[str, Any], field: str, etype: ErrorType, detail: str
) -> None:
    errors = api.check(obj)
    assert [(e.field, e.type) for e in errors] == [(field, etype)]
    assert detail in errors[0].detail


@pytest.mark.parametrize("zone", ["UTC", "Etc/GMT+5", "America/New_York", "Asia/Kolkata",
                                  "Australia/Lord_Howe"])
def test_valid_iana_zones(zone: str) -> None:
    assert api.check(cronjob(timeZone=zone)) == []


def test_name_of_exactly_52_characters_is_valid() -> None:
    assert api.check({**cronjob(), "metadata": {"name": "x" * 52}}) == []


def test_every_limit_is_inclusive() -> None:
    longest = ",".join(str(m % 60) for m in range(1024))[:1016].rstrip(",") + " * * * *"
    longest = longest.rjust(api.MAX_SCHEDULE_LENGTH)  # leading blanks are allowed
    assert len(longest) == api.MAX_SCHEDULE_LENGTH
    assert api.check(cronjob(
        schedule=longest, startingDeadlineSeconds=api.MAX_STARTING_DEADLINE_SECONDS,
        successfulJobsHistoryLimit=api.MAX_HISTORY_LIMIT,
        failedJobsHistoryLimit=api.MAX_HISTORY_LIMIT,
        timeZone="America/Argentina/ComodRivadavia")) == []
    assert api.MAX_STARTING_DEADLINE_SECONDS == 366 * 24 * 3600


@pytest.mark.parametrize("schedule", ["0 0 30 2 1", "0 0 29 2 *", "0 0 30,31 2,4 *",
                                      "@every 1m", "@every 90s", "@every 1m0.9s"])
def test_satisfiable_schedules_and_minute_intervals_are_valid(schedule: str) -> None:
    # dom OR dow when both are restricted: Feb 30 never comes, but Mondays in February do.
    assert api.check(cronjob(schedule=schedule)) == []


def test_overlong_input_is_refused_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def parse_nothing(spec: str) -> object:
        raise AssertionError("parsed an overlong schedule")

    monkeypatch.setattr(validation, "check_schedule", parse_nothing)
    huge = ",".join(str(m % 60) for m in range(500_000)) + " * * * *"  # ~1.4 MB, valid
    errors = api.check(cronjob(schedule=huge, timeZone="x" * 1_000_000))
    assert [str(e) for e in errors] == [
        "spec.schedule: Too long: may not be more than 1024 characters",
        "spec.timeZone: Too long: may not be more than 64 characters"]
    assert api.condition_reason(errors) == api.REASON_INVALID_SCHEDULE


def test_validate_takes_the_typed_cronjob() -> None:
    cronjob_, errors = api.parse(cronjob(schedule="61 * * * *"))
    assert cronjob_ is not None and errors == []
    [err] = api.validate(cronjob_)
    assert err.field == "spec.schedule"
    assert api.validate(decode(api.CronJob, cronjob())) == []


def test_validate_never_raises_on_huge_numbers_in_a_schedule() -> None:
    # int() refuses > 4300 digits with a plain ValueError; validate must still answer.
    [err] = api.check(cronjob(schedule="1" * 1000 + " * * * *"))
    assert "out of range" in err.detail
    [err] = api.check(cronjob(schedule="@every " + "9" * 1000 + "s"))
    assert "too large" in err.detail
    assert api.check(cronjob(schedule="0" * 1000 + "5 * * * *")) == []  # Go's Atoi: 5


def test_errors_accumulate() -> None:
    errors = api.check(cronjob(schedule="L", timeZone="Local", concurrencyPolicy="No"))
    assert [e.field for e in errors] == ["spec.schedule", "spec.timeZone",
                                         "spec.concurrencyPolicy"]


def test_error_strings_read_like_the_apiserver() -> None:
    [err] = api.check(cronjob(schedule="61 * * * *"))
    assert str(err) == ('spec.schedule: Invalid value: "61 * * * *": '
                        'minute field "61": 61 is above the maximum 59')
    assert err.body.startswith('Invalid value: "61 * * * *"')
    assert str(FieldError("spec", ErrorType.REQUIRED, "")) == "spec: Required value"
    assert str(FieldError("spec.suspend", ErrorType.INVALID, "must be a boolean", 1)) == (
        "spec.suspend: Invalid value: 1: must be a boolean")
    assert str(FieldError("x", ErrorType.INVALID, "d", True)) == "x: Invalid value: true: d"
    assert ErrorType.NOT_SUPPORTED.reason == "FieldValueNotSupported"


@pytest.mark.parametrize(("errors", "reason"), [
    ([FieldError("spec.schedule", ErrorType.INVALID, "x")], api.REASON_INVALID_SCHEDULE),
    ([FieldError("spec.timeZone", ErrorType.INVALID, "x")], api.REASON_UNKNOWN_TIME_ZONE),
    ([FieldError("spec.timeZone", ErrorType.INVALID, "x"),
      FieldError("spec.schedule", ErrorType.INVALID, "x")], api.REASON_INVALID_SCHEDULE),
    ([FieldError("spec.suspend", ErrorType.INVALID, "x")], api.REASON_INVALID_SPEC),
])
def test_condition_reason(errors: list[FieldError], reason: str) -> None:
    assert api.condition_reason(errors) == reason


# ---------------------------------------------------------------------------------------
# Defaulting


def test_default_patch_adds_only_missing_defaults() -> None:
    assert api.default_patch(cronjob()) == [
        {"op": "add", "path": "/spec/concurrencyPolicy", "value": "Allow"},
        {"op": "add", "path": "/spec/suspend", "value": False},
        {"op": "add", "path": "/spec/successfulJobsHistoryLimit", "value": 3},
        {"op": "add", "path": "/spec/failedJobsHistoryLimit", "value": 1},
    ]
    full = cronjob(concurrencyPolicy="Forbid", suspend=True, successfulJobsHistoryLimit=0,
                   failedJobsHistoryLimit=0)
    assert api.default_patch(full) == []
    assert api.default_patch({"metadata": {}}) == []


def test_with_defaults_copies() -> None:
    obj = cronjob(suspend=True)
    before = copy.deepcopy(obj)
    out: dict[str, Any] = api.with_defaults(obj)
    assert obj == before
    assert out["spec"]["suspend"] is True
    assert out["spec"]["concurrencyPolicy"] == "Allow"
    assert out["spec"]["failedJobsHistoryLimit"] == 1


# ---------------------------------------------------------------------------------------
# Reading a raw CronJob


def test_parse_applies_defaults_and_reads_times() -> None:
    obj = cronjob(timeZone="Europe/Berlin", startingDeadlineSeconds=30)
    obj["metadata"].update(generation=4, resourceVersion="77",
                           creationTimestamp="2024-01-01T00:00:00Z")
    obj["spec"]["jobTemplate"]["metadata"] = {"labels": {"a": "b"}, "annotations": {"c": "d"}}
    obj["status"] = {
        "active": [{"apiVersion": "batch/v1", "kind": "Job", "name": "hello-1", "namespace": "ns",
                    "uid": "j1"}],
        "lastScheduleTime": "2024-01-02T03:04:05Z", "observedGeneration": 3,
        "conditions": [{"type": "Ready", "status": "True", "reason": "Scheduled", "message": "",
                        "lastTransitionTime": "2024-01-01T00:00:00Z"}],
    }
    before = copy.deepcopy(obj)
    cj, errors = api.parse(obj)
    assert obj == before and errors == []
    assert cj is not None
    md = cj.metadata
    assert (md.name, md.namespace, md.uid, md.generation, md.resource_version) == (
        "hello", "ns", "u-1", 4, "77")
    assert md.creation_timestamp == datetime(2024, 1, 1, tzinfo=UTC)
    assert md.deletion_timestamp is None
    assert cj.spec.schedule == "*/5 * * * *"
    assert cj.spec.time_zone == "Europe/Berlin"
    assert cj.spec.starting_deadline_seconds == 30
    assert cj.spec.concurrency_policy == "Allow"
    assert cj.spec.suspend is False
    assert (cj.spec.successful_jobs_history_limit, cj.spec.failed_jobs_history_limit) == (3, 1)
    assert cj.spec.job_template["metadata"] == {"labels": {"a": "b"}, "annotations": {"c": "d"}}
    assert cj.status.active == [api.JobReference(api_version="batch/v1", kind="Job",
                                                 name="hello-1", namespace="ns", uid="j1")]
    assert cj.status.last_schedule_time == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert cj.status.observed_generation == 3
    assert cj.status.conditions[0].reason == "Scheduled"


def test_parse_tolerates_bad_values_but_not_bad_types() -> None:
    cj, errors = api.parse(cronjob(schedule="not a schedule", successfulJobsHistoryLimit=-1))
    assert cj is not None and errors == []
    assert cj.spec.schedule == "not a schedule"
    assert cj.spec.successful_jobs_history_limit == -1
    cj, errors = api.parse(cronjob(suspend="yes", failedJobsHistoryLimit="1"))
    assert {str(e) for e in errors} == {
        'spec.failedJobsHistoryLimit: Invalid value: "1": must be an integer',
        'spec.suspend: Invalid value: "yes": must be a boolean'}
    assert cj is not None and cj.spec.suspend is False  # optional: dropped, read on
    cj, errors = api.parse(without(cronjob(), "spec", "jobTemplate"))
    assert cj is None
    assert [str(e) for e in errors] == ["spec.jobTemplate: Required value"]
    cj, errors = api.parse(cronjob(schedule=5, suspend="yes"))
    assert cj is None  # a required field of the wrong type ends the reading
    assert [e.field for e in errors] == ["spec.schedule"]


def test_parse_reads_wrong_types_everywhere() -> None:
    obj = cronjob()
    obj["metadata"]["labels"] = {"a": 1}
    obj["status"] = {"lastScheduleTime": "yesterday"}
    assert [str(e) for e in api.check(obj)] == [
        'metadata.labels: Invalid value: {\'a\': 1}: must be a map of strings to strings',
        'status.lastScheduleTime: Invalid value: "yesterday": must be an RFC 3339 date-time']


# ---------------------------------------------------------------------------------------
# Time helpers and constants


@pytest.mark.parametrize(("t", "text"), [
    (datetime(2024, 1, 1, tzinfo=UTC), "2024-01-01T00:00:00Z"),
    (datetime(2024, 1, 1, 0, 0, 0, 999999, tzinfo=UTC), "2024-01-01T00:00:00Z"),
    (datetime(2024, 1, 1, tzinfo=ZoneInfo("America/New_York")), "2024-01-01T00:00:00-05:00"),
    (datetime(2024, 7, 1, tzinfo=ZoneInfo("Asia/Kolkata")), "2024-07-01T00:00:00+05:30"),
    (datetime(2024, 1, 1, tzinfo=ZoneInfo("Europe/London")), "2024-01-01T00:00:00Z"),  # as Go
    (datetime(2024, 7, 1, tzinfo=ZoneInfo("Europe/London")), "2024-07-01T00:00:00+01:00"),
])
def test_format_rfc3339_like_go(t: datetime, text: str) -> None:
    assert api.format_rfc3339(t) == text


def test_format_time_is_utc() -> None:
    t = datetime(2024, 1, 1, tzinfo=ZoneInfo("America/New_York"))
    assert format_time(t) == "2024-01-01T05:00:00Z"
    with pytest.raises(ValueError, match="naive"):
        api.format_rfc3339(datetime(2024, 1, 1))


def test_load_zone() -> None:
    assert api.load_zone(None) is UTC
    berlin = api.load_zone("Europe/Berlin")
    assert str(berlin) == "Europe/Berlin"
    summer = datetime(2024, 7, 1, tzinfo=UTC)
    assert summer.astimezone(berlin).utcoffset() == timedelta(hours=2)
    assert api.load_zone("Europe/Berlin") is berlin  # cached: one object per name
    with pytest.raises(api.UnknownTimeZoneError):
        api.load_zone("Local")


def test_load_zone_reads_the_shipped_tzdata_not_the_host(tmp_path: Path) -> None:
    # A host zoneinfo directory whose Europe/Berlin is really UTC, with an extra "zone":
    # neither may matter, so that every replica and the webhook agree whatever their image.
    utc = resources.files("tzdata.zoneinfo").joinpath("UTC").read_bytes()
    (tmp_path / "Europe").mkdir()
    (tmp_path / "Europe" / "Berlin").write_bytes(utc)
    (tmp_path / "Mars").write_bytes(utc)
    zoneinfo.reset_tzpath([str(tmp_path)])
    api.load_zone.cache_clear()
    try:
        assert ZoneInfo("Mars").utcoffset(None) == timedelta(0)  # the host has it...
        berlin = api.load_zone("Europe/Berlin")
        assert datetime(2024, 7, 1, tzinfo=UTC).astimezone(berlin).utcoffset() == (
            timedelta(hours=2))
        with pytest.raises(api.UnknownTimeZoneError, match="unknown time zone"):
            api.load_zone("Mars")  # ...but tzdata does not
    finally:
        zoneinfo.reset_tzpath()
        ZoneInfo.clear_cache()
        api.load_zone.cache_clear()


def test_resource_constants() -> None:
    assert api.CRONJOBS.path("ns", "x") == "/apis/batch.pyctrl.io/v1/namespaces/ns/cronjobs/x"
    assert api.CRONJOBS.kind == "CronJob"
    assert api.SCHEDULED_TIMESTAMP_ANNOTATION == "batch.pyctrl.io/scheduled-timestamp"


# ---------------------------------------------------------------------------------------
# The CRD agrees with api.py


def _crd_version() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    assert crd["metadata"]["name"] == "cronjobs.batch.pyctrl.io"
    [version] = crd["spec"]["versions"]
    return version  # type: ignore[no-any-return]


def test_crd_names_and_subresources() -> None:
    crd = yaml.safe_load(CRD.read_text())
    names = crd["spec"]["names"]
    assert (crd["spec"]["group"], names["kind"], names["plural"], names["singular"]) == (
        api.GROUP, api.KIND, "cronjobs", "cronjob")
    assert names["shortNames"] == ["pcj"]
    assert names["categories"] == ["pyctrl"]
    version = _crd_version()
    assert (version["name"], version["served"], version["storage"]) == (api.VERSION, True, True)
    assert version["subresources"] == {"status": {}}
    assert [c["name"].upper() for c in version["additionalPrinterColumns"]] == [
        "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "NEXT", "READY", "REASON",
        "AGE"]


def test_crd_defaults_and_enum_match_api() -> None:
    schema = _crd_version()["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]["properties"]
    for key, value in api.DEFAULTS.items():
        assert spec[key]["default"] == value, key
    assert tuple(spec["concurrencyPolicy"]["enum"]) == api.CONCURRENCY_POLICIES
    [rule] = schema["x-kubernetes-validations"]
    assert rule["rule"] == f"self.metadata.name.size() <= {api.MAX_NAME_LENGTH}"
    assert spec["schedule"]["maxLength"] == api.MAX_SCHEDULE_LENGTH
    assert spec["timeZone"]["maxLength"] == api.MAX_TIME_ZONE_LENGTH
    assert spec["startingDeadlineSeconds"]["maximum"] == api.MAX_STARTING_DEADLINE_SECONDS
    assert spec["successfulJobsHistoryLimit"]["maximum"] == api.MAX_HISTORY_LIMIT
    assert spec["failedJobsHistoryLimit"]["maximum"] == api.MAX_HISTORY_LIMIT
    assert set(schema["properties"]["status"]["properties"]) >= {
        "active", "activeCount", "lastScheduleTime", "lastSuccessfulTime", "nextScheduleTime",
        "observedGeneration", "conditions", "observedSchedule"}
