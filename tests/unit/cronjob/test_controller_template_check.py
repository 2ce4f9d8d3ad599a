"""A template the Job API refuses is found at once, by a dry-run create (issue 27 item 2).

Without the webhook, the controller asks the API server to create the template's Job with
``dryRun=All`` once per spec generation: refused, the CronJob shows Ready=False
InvalidJobTemplate with the server's message and one Warning event before its first due time,
and creates nothing until the spec changes. A dry run that cannot be made blocks nothing.
"""

from __future__ import annotations

from typing import Any

from cronjob_controller.api import CRONJOBS, CronJob
from cronjob_controller.controller import REASON_INVALID_JOB_TEMPLATE
from cronjob_controller.templatecheck import Verdict, dry_run_job
from pyctrl.api import decode
from pyctrl.errors import ApiError, Forbidden, Invalid, Timeout
from pyctrl.kube import JOBS
from pyctrl.testing import Action, FakeClient
from tests.unit.cronjob.sync_fixture import NAMESPACE, Fixture, at, new_cronjob

REFUSAL = ('Job.batch "hello-dryrun" is invalid: spec.template.spec.restartPolicy: '
           'Required value: valid values: "OnFailure", "Never"')


def refusing(err: ApiError) -> Any:
    """A reactor failing dry-run creates (only) with ``err``."""
    def react(action: Action) -> None:
        if action.options.get("dry_run"):
            raise err
    return react


def _not_due_yet(f: Fixture) -> None:
    f.add_cronjob(new_cronjob(created=at("12:00", second=10)))  # next run 12:05


def test_refused_template_is_reported_at_once_not_at_the_first_due_time() -> None:
    f = Fixture()
    _not_due_yet(f)
    f.client.prepend_reactor("create", JOBS, refusing(Invalid(REFUSAL, 422, "Invalid")))

    result = f.sync()

    ready = f.ready()
    assert (ready["status"], ready["reason"]) == ("False", REASON_INVALID_JOB_TEMPLATE)
    assert REFUSAL in ready["message"]
    assert f.events() == [("Warning", REASON_INVALID_JOB_TEMPLATE)]
    assert REFUSAL in f.messages(REASON_INVALID_JOB_TEMPLATE)[0]
    assert result is None  # no requeue until the spec changes
    assert "nextScheduleTime" not in f.status()

    f.refresh()
    f.clear()
    f.clock.set_time(at("12:05", second=1))  # due now: still nothing, nothing repeated
    f.sync()
    assert f.events() == [] and f.actions() == [] and f.dry_runs() == []


def test_fixing_the_template_makes_the_cronjob_ready_again() -> None:
    f = Fixture()
    _not_due_yet(f)
    broken = [True]

    def react(action: Action) -> None:
        if action.options.get("dry_run") and broken[0]:
            raise Invalid(REFUSAL, 422, "Invalid")

    f.client.prepend_reactor("create", JOBS, react)
    f.sync()
    broken[0] = False
    f.client.patch(CRONJOBS, "hello", {"spec": {"jobTemplate": {"metadata": {
        "labels": {"fixed": "yes"}}}}}, NAMESPACE)
    f.refresh()
    f.clear()

    f.sync()

    assert len(f.dry_runs()) == 1  # the new generation is asked once
    assert f.ready()["status"] == "True"
    assert f.status()["nextScheduleTime"] is not None


def test_template_is_asked_about_once_per_generation() -> None:
    f = Fixture()
    _not_due_yet(f)

    f.sync()
    f.refresh()
    f.sync()
    f.refresh()
    f.sync()

    assert len(f.dry_runs()) == 1
    body = f.dry_runs()[0]
    assert body["metadata"]["generateName"] == "hello-"
    assert "name" not in body["metadata"] and "ownerReferences" not in body["metadata"]
    assert body["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"


def test_a_restarted_controller_does_not_ask_again_about_an_observed_generation() -> None:
    f = Fixture()
    _not_due_yet(f)
    f.settle()
    assert f.status()["observedGeneration"] == 1
    f.clear()
    f.reconciler = f.new_reconciler()  # a new process: nothing in memory

    f.sync()

    assert f.dry_runs() == []


def test_a_restarted_controller_asks_again_about_a_refused_template() -> None:
    f = Fixture()
    _not_due_yet(f)
    f.client.prepend_reactor("create", JOBS, refusing(Invalid(REFUSAL, 422, "Invalid")))
    f.settle()
    f.reconciler = f.new_reconciler()

    f.sync()

    assert len(f.dry_runs()) == 1
    assert f.ready()["reason"] == REASON_INVALID_JOB_TEMPLATE


def test_a_dry_run_that_cannot_be_made_blocks_nothing() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob())  # due now
    f.client.prepend_reactor("create", JOBS, refusing(
        Forbidden('jobs.batch is forbidden: User "x" cannot create', 403, "Forbidden")))

    f.sync()

    assert [a[0] for a in f.actions()] == ["create"]  # the run starts
    assert f.events() == [("Normal", "SuccessfulCreate")]


def test_dry_run_job_answers() -> None:
    client = FakeClient()
    cj = decode(CronJob, new_cronjob())
    assert dry_run_job(client, cj, NAMESPACE, at("12:00")) == Verdict(True)
    client.prepend_reactor("create", JOBS, refusing(Invalid(REFUSAL, 422, "Invalid")))
    assert dry_run_job(client, cj, NAMESPACE, at("12:00")) == Verdict(False, REFUSAL)
    other = FakeClient()
    other.prepend_reactor("create", JOBS, refusing(Timeout("deadline", 0, "Timeout")))
    verdict = dry_run_job(other, cj, NAMESPACE, at("12:00"))
    assert verdict.valid is None and "deadline" in verdict.message
    assert client.list_objects(JOBS) == [] and other.list_objects(JOBS) == []  # stored none
