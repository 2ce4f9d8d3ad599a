"""The CRD schema's bounds, against the real API server (no webhook, no controller).

The schema is the first of the three places a bound is enforced (CRD, webhook, controller):
an overlong schedule, a startingDeadlineSeconds beyond its maximum, history limits beyond
theirs, and time zone names that are host files rather than zones are refused by the
apiserver itself, with the same numbers as ``cronjob_controller.api``; the limits themselves
are accepted.
"""

from __future__ import annotations

from typing import Any

import pytest

from cronjob_controller import api
from cronjob_controller.api import CRONJOBS
from pyctrl import RESTClient
from pyctrl.errors import FieldCause, Invalid
from tests.integration.cronjob.env import cronjob_body

pytestmark = pytest.mark.integration


def refused(client: RESTClient, namespace: str, name: str, **spec: Any) -> list[FieldCause]:
    """The field causes of the 422 (without the apiserver's "<nil>" note that CEL rules were
    skipped because the schema already failed)."""
    with pytest.raises(Invalid) as err:
        client.create(CRONJOBS, cronjob_body(name, **spec), namespace)
    return [c for c in err.value.causes if c.field != "<nil>"]


def test_overlong_schedule_is_refused_by_the_schema(client: RESTClient, namespace: str) -> None:
    schedule = "0" * (api.MAX_SCHEDULE_LENGTH - len(" * * * *") + 1) + " * * * *"
    [cause] = refused(client, namespace, "overlong", schedule=schedule)
    assert (cause.field, cause.reason) == ("spec.schedule", "FieldValueTooLong")
    assert str(api.MAX_SCHEDULE_LENGTH) in cause.message


@pytest.mark.parametrize(("key", "value", "maximum"), [
    ("startingDeadlineSeconds", api.MAX_STARTING_DEADLINE_SECONDS + 1,
     api.MAX_STARTING_DEADLINE_SECONDS),
    ("startingDeadlineSeconds", 1_000_000_000_000, api.MAX_STARTING_DEADLINE_SECONDS),
    ("successfulJobsHistoryLimit", api.MAX_HISTORY_LIMIT + 1, api.MAX_HISTORY_LIMIT),
    ("failedJobsHistoryLimit", 2**31 - 1, api.MAX_HISTORY_LIMIT),
], ids=["deadline-just-over", "deadline-1e12", "successful-history", "failed-history"])
def test_integer_beyond_its_maximum_is_refused_by_the_schema(
        client: RESTClient, namespace: str, key: str, value: int, maximum: int) -> None:
    [cause] = refused(client, namespace, "toolarge", **{key: value})
    assert (cause.field, cause.reason) == (f"spec.{key}", "FieldValueInvalid")
    assert f"less than or equal to {maximum}" in cause.message


@pytest.mark.parametrize("zone", ["posix/Europe/Berlin", "right/UTC", "localtime",
                                  "posixrules", "Factory", "Local", "local"])
def test_host_zoneinfo_names_are_refused_by_the_schema(
        client: RESTClient, namespace: str, zone: str) -> None:
    [cause] = refused(client, namespace, "zone", timeZone=zone)
    assert cause.field == "spec.timeZone"
    assert "must be a canonical IANA time zone name" in cause.message


def test_overlong_time_zone_is_refused_by_the_schema(client: RESTClient, namespace: str) -> None:
    causes = refused(client, namespace, "zone", timeZone="A" * (api.MAX_TIME_ZONE_LENGTH + 1))
    assert [(c.field, c.reason) for c in causes] == [("spec.timeZone", "FieldValueTooLong")]


def test_the_limits_themselves_are_accepted(client: RESTClient, namespace: str) -> None:
    schedule = "0" * (api.MAX_SCHEDULE_LENGTH - len("5 * * * *")) + "5 * * * *"
    assert len(schedule) == api.MAX_SCHEDULE_LENGTH
    created = client.create(CRONJOBS, cronjob_body(
        "limits", schedule=schedule, timeZone="America/Argentina/ComodRivadavia",
        startingDeadlineSeconds=api.MAX_STARTING_DEADLINE_SECONDS,
        successfulJobsHistoryLimit=api.MAX_HISTORY_LIMIT,
        failedJobsHistoryLimit=api.MAX_HISTORY_LIMIT), namespace)
    assert created["spec"]["schedule"] == schedule
    assert created["spec"]["startingDeadlineSeconds"] == api.MAX_STARTING_DEADLINE_SECONDS
