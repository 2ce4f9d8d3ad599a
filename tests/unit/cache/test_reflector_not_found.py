"""Reflector: a resource the API server does not serve (CRD missing, misspelled resource)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from structlog.testing import capture_logs

from pyctrl.cache.reflector import Reflector
from pyctrl.errors import NotFound
from pyctrl.kube.resource import Resource
from pyctrl.testing.fake_listwatch import FakeListWatch
from tests.threads import running
from tests.unit.cache.helpers import WAIT, RecordingStore, SleepRecordingClock, cm

CRONJOBS = Resource("batch.pyctrl.io", "v1", "cronjobs", "CronJob")


class ResourceListWatch(FakeListWatch):
    """A FakeListWatch that names its resource, as pyctrl.cache.ListWatch does."""

    resource = CRONJOBS


def _backoffs_at_least(n: int) -> Callable[[list[tuple[Any, ...]]], bool]:
    return lambda events: len([1 for name, _ in events if name == "refl-run"]) >= n


def test_missing_resource_backs_off_to_the_cap_and_says_which_resource() -> None:
    lw = ResourceListWatch()
    failures = 9
    for _ in range(failures):
        lw.queue_list_error(NotFound("the server could not find the requested resource",
                                     404, "NotFound"))
    lw.queue_list([cm("a", "5")], "10")  # the CRD got installed
    lw.queue_watch()
    clock = SleepRecordingClock()
    store = RecordingStore()
    refl = Reflector(lw, store, name="cronjobs", clock=clock, backoff_jitter=0.0)
    with capture_logs() as logs, running(refl.run, name="refl-run", join_timeout=WAIT):
        for n in range(1, failures + 1):
            assert clock.sleeps.wait_for(_backoffs_at_least(n))
            assert len(lw.list_calls) == n  # no LIST before its backoff has passed
            clock.step(clock.sleeps_of("refl-run")[-1])
        assert lw.wait_for_watch_calls(1)
    assert clock.sleeps_of("refl-run") == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0]
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert len(warnings) == failures  # once per backoff step, never more
    for entry, delay in zip(warnings, clock.sleeps_of("refl-run"), strict=True):
        assert "CustomResourceDefinition" in entry["event"]
        assert (entry["group"], entry["version"], entry["resource"]) == (
            "batch.pyctrl.io", "v1", "cronjobs")
        assert entry["retry_in"] == delay
    assert store.snapshot()[0] == ("replace", ["a"], "10")


def test_not_found_from_a_lister_without_a_resource_is_still_reported() -> None:
    lw = FakeListWatch()
    lw.queue_list_error(NotFound("nope", 404, "NotFound"))
    clock = SleepRecordingClock()
    refl = Reflector(lw, RecordingStore(), name="x", clock=clock, backoff_jitter=0.0)
    with capture_logs() as logs, running(refl.run, name="refl-run", join_timeout=WAIT):
        assert clock.sleeps.wait_for(lambda ev: any(n == "refl-run" for n, _ in ev))
    assert any("CustomResourceDefinition" in e["event"] and e["retry_in"] == 0.8
               for e in logs)
