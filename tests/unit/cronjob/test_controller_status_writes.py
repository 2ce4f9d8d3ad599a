"""Status writes never lose someone else's write (issue 27 item 5).

The status patch holds only the fields the sync changed and the cached resourceVersion, so a
write made by another writer after the cache last saw the CronJob (a restore tool seeding
lastScheduleTime, an operator) is refused with 409 instead of overwritten, and the sync runs
again from the newer copy.
"""

from __future__ import annotations

from typing import Any, Unpack

from cronjob_controller.api import CRONJOBS
from cronjob_controller.statuswrite import CACHE_WAIT_SECONDS
from pyctrl.kube import JOBS, RawObject, Resource
from pyctrl.kube.forwarding import ForwardingClient
from pyctrl.kube.interface import PatchBody
from pyctrl.kube.write_options import PatchArgs
from tests.unit.cronjob.sync_fixture import NAMESPACE, Fixture, at, fmt, new_cronjob

NOON = at("12:00")
NOON_JOB = "hello-29552400"
STATUS_PATCH = ("patch", "cronjobs", "hello", "status")


def _other_writer(f: Fixture, status: dict[str, Any]) -> None:
    """Someone else writes the status on the server; the CronJob cache does not see it yet."""
    f.client.patch(CRONJOBS, "hello", {"status": status}, NAMESPACE, patch_type="merge",
                   subresource="status")


def _jobs_cache_catches_up(f: Fixture) -> None:
    f.job_indexer.replace(f.client.list_objects(JOBS))


def test_status_written_by_someone_else_after_a_create_is_kept() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(at("11:55"))}))
    f.sync()  # creates the noon Job; its status write waits for the next sync
    assert f.job_names() == [NOON_JOB]
    seeded = fmt(at("12:30"))
    _other_writer(f, {"lastScheduleTime": seeded})
    _jobs_cache_catches_up(f)
    f.clear()

    result = f.sync()  # from the stale CronJob: the write is refused, not applied

    assert f.actions() == [STATUS_PATCH]
    assert f.status()["lastScheduleTime"] == seeded
    assert result is not None and result.requeue_after is not None
    assert 0 < result.requeue_after <= CACHE_WAIT_SECONDS

    f.refresh()
    f.clear()
    f.sync()  # from the newer copy

    assert f.actions() == [STATUS_PATCH]
    assert f.status()["lastScheduleTime"] == seeded
    assert [r["name"] for r in f.status()["active"]] == [NOON_JOB]


def test_status_patch_carries_the_cached_resource_version() -> None:
    f = Fixture()
    stored = f.add_cronjob(new_cronjob(created=at("12:00", second=10)))  # nothing due yet

    f.sync()

    patch = next(a.object for a in f.client.actions if a.verb == "patch")
    assert patch["metadata"] == {"resourceVersion": stored["metadata"]["resourceVersion"]}


def test_status_patch_sends_only_what_changed_and_no_null_for_unset_fields() -> None:
    f = Fixture()
    f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(at("11:55"))}))
    f.settle()
    f.clock.set_time(at("12:05", second=30))

    f.sync()  # creates the 12:05 Job, defers the status
    f.refresh()
    f.sync()

    written = f.status_writes()[-1]
    assert "lastSuccessfulTime" not in written  # never set, never decided: not sent
    assert "observedSchedule" not in written and "conditions" not in written  # unchanged
    assert written["lastScheduleTime"] == fmt(at("12:05"))
    assert all(value is not None for value in written.values())


def test_condition_of_another_writer_is_kept() -> None:
    f = Fixture()
    other = {"type": "Restored", "status": "True", "reason": "Backup",
             "message": "restored from backup", "lastTransitionTime": fmt(at("11:00"))}
    f.add_cronjob(new_cronjob(created=at("12:00", second=10), status={"conditions": [other]}))

    f.sync()

    conditions = f.status()["conditions"]
    assert conditions[0] == other
    assert [c["type"] for c in conditions] == ["Restored", "Ready"]


def test_suspending_clears_the_next_schedule_with_null() -> None:
    # A field the sync decides to clear is sent as null (merge patch: remove).
    f = Fixture()
    f.add_cronjob(new_cronjob(status={"lastScheduleTime": fmt(NOON)}))
    f.settle()
    assert f.status()["nextScheduleTime"] == fmt(at("12:05"))
    f.client.patch(CRONJOBS, "hello", {"spec": {"suspend": True}}, NAMESPACE)
    f.refresh()

    f.sync()

    assert f.status_writes()[-1]["nextScheduleTime"] is None
    assert "nextScheduleTime" not in f.status()


def test_the_status_write_asks_for_the_answers_metadata_only() -> None:
    """Nothing reads the patched CronJob: the RESTClient decodes only its metadata (what
    read-your-own-writes records)."""
    f = Fixture()
    f.add_cronjob(new_cronjob(created=at("12:00", second=10)))
    asked: list[dict[str, Any]] = []

    class Spy(ForwardingClient):
        def patch(self, resource: Resource, name: str, patch: PatchBody,
                  namespace: str | None = None, **kwargs: Unpack[PatchArgs]) -> RawObject:
            asked.append(dict(kwargs))
            return super().patch(resource, name, patch, namespace, **kwargs)

    f.reconciler.status_writer.client = Spy(f.client)
    f.sync()

    assert asked == [{"patch_type": "merge", "subresource": "status", "answer": "metadata"}]
