"""WatchDecoder: newline-delimited JSON events from arbitrary chunk boundaries."""

from __future__ import annotations

import itertools

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyctrl.errors import ApiError
from pyctrl.kube.watch import WatchDecoder

EVENTS = [
    {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "1"}}},
    {"type": "MODIFIED", "object": {"metadata": {"name": "ünïcode", "resourceVersion": "2"}}},
    {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "3"}}},
    {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}},
]
STREAM = b"".join(orjson.dumps(e) + b"\n" for e in EVENTS)


def test_whole_stream_in_one_chunk() -> None:
    assert WatchDecoder().feed(STREAM) == EVENTS


def test_byte_by_byte_including_split_utf8() -> None:
    decoder = WatchDecoder()
    out = []
    for i in range(len(STREAM)):
        out += decoder.feed(STREAM[i : i + 1])
    assert out == EVENTS and decoder.pending == 0


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_chunking_yields_the_same_events(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    decoder = WatchDecoder()
    out = []
    for start, end in itertools.pairwise(bounds):
        out += decoder.feed(STREAM[start:end])
    assert out == EVENTS


def test_final_event_without_newline_and_blank_lines() -> None:
    decoder = WatchDecoder()
    assert decoder.feed(b"\n\n" + orjson.dumps(EVENTS[0])) == []
    assert decoder.finish() == [EVENTS[0]]


def test_garbage_raises() -> None:
    with pytest.raises(ApiError):
        WatchDecoder().feed(b"not json\n")
    with pytest.raises(ApiError):
        WatchDecoder().feed(b"[1, 2]\n")
