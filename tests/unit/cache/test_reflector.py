"""Reflector: paged LIST, WATCH, bookmarks, 410 relist, drops, silence, backoff."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager

import pytest

from pyctrl.cache.backoff import ExponentialBackoffManager
from pyctrl.cache.listwatch import sequential_pages
from pyctrl.cache.reflector import Reflector
from pyctrl.errors import Forbidden, Gone, ServerError, TooManyRequests, Unreachable
from pyctrl.kube.interface import RawObject
from pyctrl.testing.fake_clock import FakeClock
from pyctrl.testing.fake_listwatch import FakeListWatch
from tests import threads
from tests.unit.cache.helpers import WAIT, RecordingStore, SleepRecordingClock, cm


def running(reflector: Reflector) -> AbstractContextManager[threading.Event]:
    return threads.running(reflector.run, name="refl-run", join_timeout=WAIT)


def make(lw: FakeListWatch, clock: FakeClock, **kw: float) -> tuple[Reflector, RecordingStore]:
    store = RecordingStore()
    opts: dict[str, float] = {"backoff_jitter": 0.0, **kw}
    refl = Reflector(lw, store, name="refl", clock=clock, page_size=2, **opts)  # type: ignore[arg-type]
    return refl, store


def test_paged_list_then_watch_from_list_resource_version() -> None:
    lw = FakeListWatch()
    lw.queue_list_pages([cm(f"o{i}") for i in range(5)], "100", page_size=2)
    clock = FakeClock()
    refl, store = make(lw, clock)
    with running(refl):
        assert lw.wait_for_watch_calls(1)
    assert [c["limit"] for c in lw.list_calls] == [2, 2, 2]
    assert [c["continue_"] for c in lw.list_calls] == [None, "continue-1", "continue-2"]
    assert [c["resource_version"] for c in lw.list_calls] == ["", None, None]
    assert store.snapshot()[0] == ("replace", [f"o{i}" for i in range(5)], "100")
    assert lw.watch_calls[0]["resource_version"] == "100"
    assert lw.watch_calls[0]["allow_watch_bookmarks"] is True
    assert 300 <= lw.watch_calls[0]["timeout_seconds"] <= 600


def test_watch_events_and_bookmarks_advance_last_sync_resource_version() -> None:
    lw = FakeListWatch()
    lw.queue_list([], "10")
    stream = lw.queue_watch()
    stream.add(cm("a", "11")).modify(cm("a", "12")).delete(cm("a", "13")).bookmark("20")
    refl, store = make(lw, FakeClock())
    with running(refl):
        assert store.wait_count(4)
        assert store.snapshot()[1:] == [("add", "a"), ("update", "a"), ("delete", "a")]
        assert stream.wait_processed()
        assert refl.last_sync_resource_version() == "20"


def test_in_stream_410_error_relists_from_last_version() -> None:
    lw = FakeListWatch()
    lw.queue_list([cm("a", "5")], "10")
    lw.queue_watch().add(cm("b", "11")).error_gone()
    lw.queue_list([cm("a", "5"), cm("b", "11")], "12")
    clock = SleepRecordingClock()
    refl, store = make(lw, clock)
    with running(refl):
        assert clock.sleeps.wait_for(lambda ev: any(n == "refl-run" for n, _ in ev))
        clock.step(1.0)  # past the 0.8 s backoff
        assert lw.wait_for_watch_calls(2)
    assert [c["resource_version"] for c in lw.list_calls] == ["", "11"]
    assert store.snapshot()[-1] == ("replace", ["a", "b"], "12")
    assert lw.watch_calls[1]["resource_version"] == "12"


def test_410_on_watch_open_right_after_list_relists_consistently() -> None:
    lw = FakeListWatch()
    lw.queue_list([], "10")
    lw.queue_watch_error(Gone("too old resource version", 410, "Expired"))
    lw.queue_list([cm("x", "30")], "30")
    clock = SleepRecordingClock()
    refl, _ = make(lw, clock)
    with running(refl):
        assert clock.sleeps.wait_for(lambda ev: any(n == "refl-run" for n, _ in ev))
        clock.step(1.0)
        assert lw.wait_for_watch_calls(2)
    # Watching from the listed version already failed: "at least 10" could return 10 again.
    assert [c["resource_version"] for c in lw.list_calls] == ["", ""]
    assert lw.watch_calls[1]["resource_version"] == "30"


def test_expired_relist_at_last_version_falls_back_to_consistent_read() -> None:
    lw = FakeListWatch()
    lw.queue_list([], "10")
    lw.queue_watch().add(cm("a", "11")).error_gone()
    lw.queue_list_error(Gone("too old resource version", 410, "Expired"))
    lw.queue_list([cm("x", "30")], "30")
    clock = SleepRecordingClock()
    refl, _ = make(lw, clock)
    with running(refl):
        assert clock.sleeps.wait_for(lambda ev: any(n == "refl-run" for n, _ in ev))
        clock.step(1.0)
        assert lw.wait_for_watch_calls(2)
    assert [c["resource_version"] for c in lw.list_calls] == ["", "11", ""]
    assert lw.list_calls[1]["limit"] is None  # a relist at a version is never paged
    assert lw.watch_calls[1]["resource_version"] == "30"


def test_410_while_following_continue_restarts_list_unpaged_consistent() -> None:
    lw = FakeListWatch()
    lw.queue_list([cm("a")], "10", continue_="c1")
    lw.queue_list_error(Gone("continue token expired", 410, "Expired"))
    lw.queue_list([cm("a"), cm("b")], "15")
    refl, store = make(lw, FakeClock())
    with running(refl):
        assert lw.wait_for_watch_calls(1)
    assert lw.list_calls[2] == {"limit": None, "continue_": None, "resource_version": ""}
    assert store.snapshot()[0] == ("replace", ["a", "b"], "15")
    assert lw.watch_calls[0]["resource_version"] == "15"


def test_dropped_stream_rewatches_from_last_event_without_relist() -> None:
    lw = FakeListWatch()
    lw.queue_list([], "10")
    lw.queue_watch().add(cm("a", "11")).end()
    clock = SleepRecordingClock()
    refl, _ = make(lw, clock)
    with running(refl):
        assert lw.wait_for_watch_calls(2)
    assert lw.watch_calls[1]["resource_version"] == "11"
    assert len(lw.list_calls) == 1
    assert clock.sleeps_of("refl-run") == []  # no backoff for a clean drop


def test_silent_watch_is_restarted_but_bookmarks_keep_it_alive() -> None:
    lw = FakeListWatch()
    lw.queue_list([], "10")
    first = lw.queue_watch()
    clock = SleepRecordingClock()
    refl, _ = make(lw, clock, watch_silence_timeout=30.0)
    with running(refl):
        assert lw.wait_for_watch_calls(1)
        assert clock.wait_for_waiters(1)  # the watchdog is parked
        clock.step(20)
        first.bookmark("11")
        assert first.wait_processed()
        assert refl.last_sync_resource_version() == "11"
        clock.step(20)  # 40 s since open but only 20 s since the bookmark
        # The watchdog wakes at its old deadline and re-arms for the remaining 10 s.
        assert clock.sleeps.wait_for(
            lambda ev: [s for n, s in ev if n == "refl-watchdog"][-1:] == [10.0])
        assert not first.closed
        assert len(lw.watch_calls) == 1
        clock.step(11)  # 31 s of silence
        assert lw.wait_for_watch_calls(2)
        assert first.closed
    assert len(lw.list_calls) == 1
    assert lw.watch_calls[1]["resource_version"] == "11"


def test_watch_open_failures_back_off_exponentially_then_reset_after_healthy_period() -> None:
    lw = FakeListWatch()
    lw.queue_list([], "10")
    lw.queue_watch_error(ServerError("boom", 500))
    lw.queue_watch_error(TooManyRequests("slow down", 429))
    lw.queue_watch_error(ServerError("boom", 500))
    healthy = FakeListWatch().queue_watch()
    lw.queue_watch(healthy)
    lw.queue_watch_error(ServerError("boom again", 500))
    clock = SleepRecordingClock()
    refl, _ = make(lw, clock, watch_silence_timeout=1000.0)

    def backoffs(n: int) -> list[float]:
        assert clock.sleeps.wait_for(
            lambda ev: len([1 for name, _ in ev if name == "refl-run"]) >= n)
        return clock.sleeps_of("refl-run")

    with running(refl):
        assert backoffs(1) == [0.8]
        clock.step(0.8)
        assert backoffs(2) == [0.8, 1.6]
        clock.step(1.6)
        assert backoffs(3) == [0.8, 1.6, 3.2]
        clock.step(3.2)
        assert lw.wait_for_watch_calls(4)
        clock.step(200)  # a long healthy watch
        healthy.end()
        healthy.add(cm("z", "11"))  # never consumed: end() came first
        assert backoffs(4) == [0.8, 1.6, 3.2, 0.8]
    assert len(lw.list_calls) == 1  # all re-watches, no relist


def test_429_retry_after_lengthens_backoff() -> None:
    lw = FakeListWatch()
    lw.queue_list([], "10")
    lw.queue_watch_error(TooManyRequests("slow", 429, retry_after=7.0))
    clock = SleepRecordingClock()
    refl, _ = make(lw, clock)
    with running(refl):
        assert clock.sleeps.wait_for(lambda ev: any(n == "refl-run" for n, _ in ev))
    assert clock.sleeps_of("refl-run")[0] == 7.0


def test_forbidden_watch_relists_after_backoff() -> None:
    lw = FakeListWatch()
    lw.queue_list([], "10")
    lw.queue_watch_error(Forbidden("no", 403))
    lw.queue_list([], "11")
    clock = SleepRecordingClock()
    refl, _ = make(lw, clock)
    with running(refl):
        assert clock.sleeps.wait_for(lambda ev: any(n == "refl-run" for n, _ in ev))
        clock.step(1)
        assert lw.wait_for_list_calls(2)
        assert lw.wait_for_watch_calls(2)
    assert lw.watch_calls[1]["resource_version"] == "11"


def test_list_failure_backs_off_and_retries() -> None:
    lw = FakeListWatch()
    lw.queue_list_error(ServerError("etcd down", 500))
    lw.queue_list([cm("a")], "10")
    clock = SleepRecordingClock()
    refl, store = make(lw, clock)
    with running(refl):
        assert clock.sleeps.wait_for(lambda ev: any(n == "refl-run" for n, _ in ev))
        clock.step(1)
        assert lw.wait_for_watch_calls(1)
    assert store.snapshot()[0] == ("replace", ["a"], "10")


def test_backoff_grows_caps_and_resets() -> None:
    clock = FakeClock()
    b = ExponentialBackoffManager(clock, initial=1.0, maximum=4.0, jitter=0.0, reset_after=60.0)
    assert [b.next() for _ in range(4)] == [1.0, 2.0, 4.0, 4.0]
    clock.step(61)
    assert b.next() == 1.0
    jittered = ExponentialBackoffManager(clock, initial=1.0, jitter=1.0, rand=lambda: 0.5)
    assert jittered.next() == 1.5



def test_unreachable_server_rewatches_from_the_same_version_without_relisting() -> None:
    """An apiserver restart (connection refused) keeps the cache: re-watch, no LIST."""
    lw = FakeListWatch()
    lw.queue_list([cm("a", "5")], "10")
    lw.queue_watch_error(Unreachable("connection refused", reason="ConnectionError"))
    lw.queue_watch()
    clock = SleepRecordingClock()
    refl, _ = make(lw, clock)
    with running(refl):
        assert clock.sleeps.wait_for(lambda ev: any(n == "refl-run" for n, _ in ev))
        clock.step(1.0)  # past the backoff
        assert lw.wait_for_watch_calls(2)
    assert [c["resource_version"] for c in lw.watch_calls[:2]] == ["10", "10"]
    assert len(lw.list_calls) == 1


class PagingListWatch(FakeListWatch):
    """A FakeListWatch that also offers list_pages (and records its use and closing)."""

    def __init__(self) -> None:
        super().__init__()
        self.pages_calls: list[dict[str, object]] = []
        self.closed = 0

    def list_pages(self, *, limit: int | None, resource_version: str) -> Iterator[RawObject]:
        self.pages_calls.append({"limit": limit, "resource_version": resource_version})
        try:
            yield from sequential_pages(self, limit=limit, resource_version=resource_version)
        finally:
            self.closed += 1


def test_list_pages_is_used_when_offered_and_410_on_continue_restarts_unpaged() -> None:
    lw = PagingListWatch()
    lw.queue_list([cm("a")], "10", continue_="c1")
    lw.queue_list_error(Gone("continue token expired", 410, "Expired"))
    lw.queue_list([cm("a"), cm("b")], "15")
    refl, store = make(lw, FakeClock())
    with running(refl):
        assert lw.wait_for_watch_calls(1)
    assert lw.pages_calls == [{"limit": 2, "resource_version": ""}]
    assert lw.list_calls[2] == {"limit": None, "continue_": None, "resource_version": ""}
    assert store.snapshot()[0] == ("replace", ["a", "b"], "15")
    assert lw.closed == 1


def test_stop_during_a_paged_list_closes_the_page_generator() -> None:
    lw = PagingListWatch()
    lw.queue_list([cm("a")], "10", continue_="c1")
    lw.queue_list([cm("b")], "10")
    store = RecordingStore()
    stop = threading.Event()

    def stopping(obj: RawObject) -> RawObject:
        stop.set()  # stop arrives while the first page is being consumed
        return obj

    refl = Reflector(lw, store, name="refl", clock=FakeClock(), page_size=1,
                     transform=stopping)
    refl.run(stop)
    assert len(lw.list_calls) == 1
    assert lw.closed == 1
    assert store.snapshot() == []


class StreamingStore(RecordingStore):
    """A RecordingStore that also takes the first list's pages as they come."""

    def __init__(self, accept: bool) -> None:
        super().__init__()
        self.accept = accept

    def stream_initial(self, objs: list[RawObject]) -> bool:
        self.record("stream", [o["metadata"]["name"] for o in objs])
        return self.accept


@pytest.mark.parametrize("accept", [True, False])
def test_first_list_pages_are_streamed_to_a_store_that_takes_them(accept: bool) -> None:
    # Then replaced whole; a store that declines a page gets no more pages of that list.
    lw = FakeListWatch()
    lw.queue_list_pages([cm(f"o{i}") for i in range(5)], "100", page_size=2)
    store = StreamingStore(accept=accept)
    refl = Reflector(lw, store, name="refl", clock=FakeClock(), page_size=2)
    with running(refl):
        assert lw.wait_for_watch_calls(1)
    streamed = [["o0", "o1"], ["o2", "o3"], ["o4"]] if accept else [["o0", "o1"]]
    replaced = ("replace", [f"o{i}" for i in range(5)], "100")
    assert store.snapshot()[:len(streamed) + 1] == [
        *(("stream", names) for names in streamed), replaced]


def test_a_restarting_server_is_retried_within_seconds_not_the_30s_backoff() -> None:
    # Issue 35 item 1: after a 20 s outage the CronJob reflector backed off 22 s, then met a
    # 403 from the restarted apiserver (its RBAC cache not yet filled) and backed off again.
    lw = FakeListWatch()
    lw.queue_list([], "10")
    for _ in range(6):
        lw.queue_watch_error(Unreachable("connection refused", reason="ConnectionError"))
    lw.queue_watch_error(Forbidden("RBAC: not ready", 403))  # the watch: relist
    lw.queue_list_error(Forbidden("RBAC: not ready", 403))
    lw.queue_list([], "20")
    lw.queue_watch()
    clock = SleepRecordingClock()
    refl, _ = make(lw, clock, watch_silence_timeout=1000.0)

    def sleeps(n: int) -> list[float]:
        assert clock.sleeps.wait_for(
            lambda ev: len([1 for name, _ in ev if name == "refl-run"]) >= n)
        return clock.sleeps_of("refl-run")

    with running(refl):
        for n in range(1, 9):
            clock.step(sleeps(n)[-1])
        assert lw.wait_for_watch_calls(8)
    assert sleeps(8) == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0]
    assert [c["resource_version"] for c in lw.list_calls][-1] == "10"


def test_a_403_long_after_any_outage_keeps_the_ordinary_backoff() -> None:
    lw = FakeListWatch()
    lw.queue_list_error(Forbidden("denied", 403))
    lw.queue_list([], "10")
    lw.queue_watch()
    clock = SleepRecordingClock()
    refl, _ = make(lw, clock, watch_silence_timeout=1000.0)
    with running(refl):
        assert clock.sleeps.wait_for(lambda ev: any(n == "refl-run" for n, _ in ev))
        assert clock.sleeps_of("refl-run") == [0.8]
        clock.step(0.8)
        assert lw.wait_for_watch_calls(1)
