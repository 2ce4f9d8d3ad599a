"""Paged LIST generators: continue_token sniffing, pipelined_pages, ListWatch.list_pages."""

from __future__ import annotations

import gc
import threading
from typing import Any

import orjson
import pytest

from pyctrl.cache.listwatch import ListWatch, continue_token, pipelined_pages
from pyctrl.errors import ApiError, Gone
from pyctrl.kube.interface import RawObject
from pyctrl.kube.resource import CONFIGMAPS
from pyctrl.testing import FakeClient
from tests.unit.cache.helpers import WAIT, cm


def body(names: list[str], cont: str = "", rv: str = "7") -> bytes:
    md: dict[str, Any] = {"resourceVersion": rv}
    if cont:
        md["continue"] = cont
        md["remainingItemCount"] = 3
    return orjson.dumps({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": md,
                         "items": [cm(n) for n in names]})


def names(page: RawObject) -> list[str]:
    return [o["metadata"]["name"] for o in page["items"]]


def prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("prefetch")]


def test_continue_token_is_read_from_the_head() -> None:
    assert continue_token(body(["a"], cont="tok-1")) == "tok-1"
    assert continue_token(body(["a"])) is None
    assert continue_token(b'{"metadata":{"continue":"x"}}') is None  # no items key
    assert continue_token(b'{"metadata":{"continue":"x"},"items":[]}') == "x"
    assert continue_token(b'{"metadata":{"continue":"x"}"items":[]}') is None  # malformed
    # A quoted "items": inside a string is escaped, so the real key is found.
    assert continue_token(b'{"a":"\\"items\\":","metadata":{"continue":"x"},"items":[]}') == "x"
    # A nested "items" key leaves an unbalanced head: no guess.
    assert continue_token(b'{"metadata":{"items":[],"continue":"x"},"items":[]}') is None
    assert continue_token(b"") is None


def test_pages_come_in_order_and_the_next_is_requested_before_this_one_is_consumed() -> None:
    bodies = {None: body(["a", "b"], "c1"), "c1": body(["c", "d"], "c2"), "c2": body(["e"])}
    calls: list[str | None] = []
    requested = threading.Event()

    def fetch(cont: str | None) -> bytes:
        calls.append(cont)
        if cont == "c1":
            requested.set()
        return bodies[cont]

    pages = pipelined_pages(fetch, name="prefetch-test")
    first = next(pages)
    assert names(first) == ["a", "b"]
    assert requested.wait(WAIT), "page 2 was not prefetched while page 1 was consumed"
    assert [names(p) for p in pages] == [["c", "d"], ["e"]]
    assert calls == [None, "c1", "c2"]
    assert not prefetch_threads()


def test_every_continue_is_fetched_on_one_background_thread() -> None:
    # A transport with a connection per thread then opens one connection for all of them.
    bodies = {None: body(["a"], "c1"), "c1": body(["b"], "c2"), "c2": body(["c"], "c3"),
              "c3": body(["d"])}
    threads: dict[str | None, threading.Thread] = {}

    def fetch(cont: str | None) -> bytes:
        threads[cont] = threading.current_thread()
        return bodies[cont]

    pages = list(pipelined_pages(fetch, name="prefetch-test"))
    assert [names(p) for p in pages] == [["a"], ["b"], ["c"], ["d"]]
    assert threads[None] is threading.current_thread()
    assert threads["c1"] is threads["c2"] is threads["c3"]
    assert threads["c1"] is not threading.current_thread()
    assert not prefetch_threads()


def test_the_collector_is_paused_while_the_consumer_holds_a_page() -> None:
    bodies = {None: body(["a"], "c1"), "c1": body(["b"])}
    collector_on_at_fetch: list[bool] = []

    def fetch(cont: str | None) -> bytes:
        collector_on_at_fetch.append(gc.isenabled())
        return bodies[cont]

    assert gc.isenabled()
    pages = pipelined_pages(fetch, name="prefetch-test")
    next(pages)
    assert not gc.isenabled()  # the consumer transforms and stores the page meanwhile
    next(pages)
    assert not gc.isenabled()
    with pytest.raises(StopIteration):
        next(pages)
    assert gc.isenabled()
    assert collector_on_at_fetch[0]  # never paused around a request made here
    pages = pipelined_pages(fetch, name="prefetch-test")
    next(pages)
    pages.close()  # closed mid-list: resumed too
    assert gc.isenabled()


def test_a_wrong_guess_from_the_head_is_discarded() -> None:
    # Duplicate keys: the head says "wrong", the decoded page (last key wins) says "c1".
    tricky = b'{"metadata":{"continue":"wrong"},"items":[],"metadata":{"continue":"c1"}}'
    bodies = {None: tricky, "wrong": body(["bad"]), "c1": body(["good"])}
    calls: list[str | None] = []

    def fetch(cont: str | None) -> bytes:
        calls.append(cont)
        return bodies[cont]

    pages = list(pipelined_pages(fetch, name="prefetch-test"))
    assert [names(p) for p in pages] == [[], ["good"]]
    assert calls == [None, "wrong", "c1"]


def test_an_error_on_a_continue_is_raised_for_that_page() -> None:
    def fetch(cont: str | None) -> bytes:
        if cont:
            raise Gone("continue expired", 410, "Expired")
        return body(["a"], "c1")

    pages = pipelined_pages(fetch, name="prefetch-test")
    assert names(next(pages)) == ["a"]
    with pytest.raises(Gone):
        next(pages)
    assert not prefetch_threads()


def test_an_undecodable_page_raises_a_decode_error_and_joins_the_prefetch() -> None:
    def fetch(cont: str | None) -> bytes:
        return b'{"metadata":{"continue":"c1"},"items":[' if cont is None else body(["b"])

    with pytest.raises(ApiError) as err:
        next(pipelined_pages(fetch, name="prefetch-test"))
    assert err.value.reason == "DecodeError"
    assert not prefetch_threads()


def test_closing_mid_list_joins_the_inflight_request() -> None:
    started, release = threading.Event(), threading.Event()

    def fetch(cont: str | None) -> bytes:
        if cont is None:
            return body(["a"], "c1")
        started.set()
        assert release.wait(WAIT)
        return body(["b"])

    pages = pipelined_pages(fetch, name="prefetch-test")
    next(pages)
    assert started.wait(WAIT)
    assert prefetch_threads()
    release.set()
    pages.close()
    assert not prefetch_threads()


def test_list_watch_without_list_raw_or_with_list_overridden_pages_sequentially() -> None:
    client = FakeClient()
    for i in range(3):
        client.create(CONFIGMAPS, {"metadata": {"name": f"o{i}"}}, "ns")
    pages = list(ListWatch(client, CONFIGMAPS, "ns").list_pages(limit=None, resource_version=""))
    assert [names(p) for p in pages] == [["o0", "o1", "o2"]]

    class Snapshot(ListWatch):
        def list(self, *, limit: int | None, continue_: str | None,
                 resource_version: str | None) -> RawObject:
            return {"metadata": {"resourceVersion": "1"}, "items": [cm("snap")]}

    class RawClient(FakeClient):
        def list_raw(self, *args: Any, **kwargs: Any) -> bytes:
            raise AssertionError("list_raw must not be used when list() is overridden")

    lw = Snapshot(RawClient(), CONFIGMAPS, "ns")
    assert [names(p) for p in lw.list_pages(limit=2, resource_version="")] == [["snap"]]
