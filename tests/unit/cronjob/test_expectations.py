"""RunRecord's created/unseen/seen contract (the Forbid/Replace cache wait), on its own.

The controller tests drive the wait through a sync; these pin down each way it ends: the
cache shows the Job, the Job's event (or deletion) is delivered, ``ttl`` seconds pass on the
record's own clock, or the CronJob is forgotten.
"""

from __future__ import annotations

from cronjob_controller.expectations import GoneJobs, RunRecord
from pyctrl.testing import FakeClock

KEY = "ns/cj"


def test_a_created_job_is_unseen_until_the_cache_shows_it() -> None:
    runs = RunRecord()
    runs.created(KEY, "cj-1")
    assert runs.unseen(KEY, set()) == "cj-1"
    assert runs.unseen(KEY, {"cj-0"}) == "cj-1"  # an older Job does not end the wait
    assert runs.unseen("ns/other", set()) is None
    assert runs.unseen(KEY, {"cj-0", "cj-1"}) is None
    assert runs.unseen(KEY, set()) is None  # cleared: a later cache without it is a deletion


def test_seen_ends_the_wait_only_for_the_job_created_last() -> None:
    runs = RunRecord()
    runs.created(KEY, "cj-1")
    runs.created(KEY, "cj-2")
    runs.seen(KEY, "cj-1")
    assert runs.unseen(KEY, set()) == "cj-2"
    runs.seen(KEY, "cj-2")
    assert runs.unseen(KEY, set()) is None


def test_the_wait_ends_after_ttl_seconds_on_the_records_clock() -> None:
    clock = FakeClock()
    runs = RunRecord(ttl=30.0, clock=clock)
    runs.created(KEY, "cj-1")
    clock.step(29.0)
    assert runs.unseen(KEY, set()) == "cj-1"
    clock.step(2.0)  # never delivered (created and deleted before a LIST showed it)
    assert runs.unseen(KEY, set()) is None


def test_forget_drops_the_pending_job() -> None:
    runs = RunRecord()
    runs.created(KEY, "cj-1")
    runs.forget(KEY)
    assert runs.unseen(KEY, set()) is None


def test_gone_jobs_are_forgotten_only_when_a_write_settles_them() -> None:
    gone = GoneJobs()
    gone.note("ns/a", "j1")
    gone.note("ns/a", "j2")
    # A cached status that does not list a noted Job may predate the one that does.
    assert gone.explained("ns/a", set()) == set()
    assert gone.explained("ns/a", {"j1", "x"}) == {"j1"}
    gone.settle("ns/a", {"j2"})  # a write from a status listing only j2 succeeded
    assert gone.explained("ns/a", {"j1", "j2"}) == {"j2"}
    gone.settle("ns/a", set())
    assert len(gone) == 0
    gone.settle("ns/b", set())  # nothing noted: nothing to do
    assert len(gone) == 0
