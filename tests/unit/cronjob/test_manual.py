"""manual.py and ``python -m cronjob_controller trigger``: the manual run's Job, and its
handover to the CronJob's shard when the controller runs sharded.

How the owning shard then adopts a Job listed this way (also while the CronJob drains) is
proved on the sharding side: tests/unit/sharding/test_owned.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from cronjob_controller import __main__ as cli
from cronjob_controller.api import CRONJOBS, SCHEDULED_TIMESTAMP_ANNOTATION
from cronjob_controller.manual import ManualRun, run_now
from cronjob_controller.wiring import CONTROLLER_NAME
from pyctrl.errors import Conflict, Forbidden
from pyctrl.kube import JOBS
from pyctrl.sharding import ShardingOptions
from pyctrl.sharding.owned import handover_of
from pyctrl.testing import Action, FakeClient

NS = "team-a"
NOW = datetime(2024, 1, 1, 5, 0, tzinfo=UTC)
# What the controller's shards read (``--sharding``): the same keys must come out here.
SHARDED = ShardingOptions(controller=CONTROLLER_NAME, shard_id="pod-a", resource=CRONJOBS,
                          owned=(JOBS,))


def _client(*, shard: str | None = None, listed: list[str] | None = None) -> FakeClient:
    client = FakeClient()
    meta: dict[str, Any] = {"name": "hello", "namespace": NS, "labels": {"app": "x"}}
    if shard:
        meta["labels"][SHARDED.shard_label] = shard
    if listed is not None:
        meta["annotations"] = {SHARDED.handover_annotation: json.dumps({"jobs.batch": listed})}
    client.add_object(CRONJOBS, {
        "apiVersion": CRONJOBS.api_version, "kind": CRONJOBS.kind, "metadata": meta,
        "spec": {"schedule": "0 0 * * *", "timeZone": "Europe/Berlin", "jobTemplate": {
            "metadata": {"annotations": {SCHEDULED_TIMESTAMP_ANNOTATION: "spoofed"}},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox"}]}}}}}})
    client.clear_actions()
    return client


def _run(client: FakeClient) -> ManualRun:
    return run_now(client, client.get_object(CRONJOBS, "hello", NS), NOW)


def _listed(client: FakeClient) -> set[tuple[str, str]]:
    return handover_of(client.get_object(CRONJOBS, "hello", NS), SHARDED)


def test_an_unsharded_cronjob_gets_its_manual_job_and_nothing_else() -> None:
    client = _client()
    made = _run(client)
    assert made == ManualRun(made.job, "unsharded")
    assert [(a.verb, a.resource) for a in client.actions] == [("create", JOBS)]
    job = client.get_object(JOBS, made.job, NS)
    assert made.job.startswith("hello-manual-") and len(made.job) == len("hello-manual-") + 5
    assert job["metadata"]["annotations"] == {"cronjob.kubernetes.io/instantiate": "manual"}
    assert job["metadata"]["labels"] == {}
    cronjob = client.get_object(CRONJOBS, "hello", NS)
    assert job["metadata"]["ownerReferences"][0]["uid"] == cronjob["metadata"]["uid"]
    assert "annotations" not in cronjob["metadata"]


def test_a_sharded_cronjob_lists_its_manual_job_with_the_list_already_on_it() -> None:
    client = _client(shard="pod-a", listed=["hello-28401120"])
    made = _run(client)
    assert made == ManualRun(made.job, "listed")
    assert _listed(client) == {("jobs.batch", "hello-28401120"), ("jobs.batch", made.job)}
    job = client.get_object(JOBS, made.job, NS)
    assert SHARDED.shard_label not in job["metadata"]["labels"], \
        "created for no shard: the CronJob's shard relabels it when it adopts it"
    labels = client.get_object(CRONJOBS, "hello", NS)["metadata"]["labels"]
    assert labels == {"app": "x", SHARDED.shard_label: "pod-a"}


def test_a_listing_refused_by_a_concurrent_write_is_retried() -> None:
    """The CronJob's old shard acknowledges its move (removing the labels) between the
    helper's read and its listing: the listing is refused, read again and written."""
    client = _client(shard="pod-a")
    raced: list[bool] = []

    def acknowledge(action: Action) -> None:
        if not raced:
            raced.append(True)
            client.patch(CRONJOBS, "hello", {"metadata": {"labels": {
                SHARDED.shard_label: None}}}, NS)

    client.prepend_reactor("patch", CRONJOBS, acknowledge)
    made = _run(client)
    assert made.handover == "listed"
    assert _listed(client) == {("jobs.batch", made.job)}
    assert [a.verb for a in client.actions if a.resource == CRONJOBS] == [
        "patch", "patch", "get", "patch"]


def _cli(monkeypatch: pytest.MonkeyPatch, client: FakeClient) -> int:
    monkeypatch.setattr(cli, "_client", lambda args: client)
    return cli.main(["trigger", "hello", "-n", NS])


def test_trigger_prints_the_job_and_exits_0(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    client = _client(shard="pod-a")
    assert _cli(monkeypatch, client) == 0
    out, err = capsys.readouterr()
    [job] = client.list_objects(JOBS, NS)
    assert out == f"job.batch/{job['metadata']['name']} created\n" and err == ""
    assert _listed(client) == {("jobs.batch", job["metadata"]["name"])}


@pytest.mark.parametrize("error", [
    Conflict("the object has been modified", 409, "Conflict"),
    Forbidden("cannot patch cronjobs", 403, "Forbidden"),
])
def test_a_failed_listing_warns_and_still_exits_0(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        error: Exception) -> None:
    """The Job exists: the sharder's sweep hands it over within its resync."""
    client = _client(shard="pod-a")

    def refuse(action: Action) -> None:
        raise error

    client.prepend_reactor("patch", CRONJOBS, refuse)
    assert _cli(monkeypatch, client) == 0
    out, err = capsys.readouterr()
    [job] = client.list_objects(JOBS, NS)
    assert out == f"job.batch/{job['metadata']['name']} created\n"
    assert err.startswith(f"warning: could not list job {job['metadata']['name']}")
    assert "sweep" in err and str(error) in err
    assert _listed(client) == set()


def test_trigger_of_a_missing_cronjob_exits_2(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(monkeypatch, FakeClient()) == 2
    assert "not found" in capsys.readouterr().err
