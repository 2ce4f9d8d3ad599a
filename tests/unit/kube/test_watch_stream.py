"""HTTPWatchStream over a raw socket server: chunked framing as the wire may cut it, latency,
broken streams, gzip, and when the connection may go back to the pool."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator, Sequence

import orjson
import pytest
import urllib3

from pyctrl.kube.client import RESTClient
from pyctrl.kube.config import KubeConfig
from pyctrl.kube.interface import WatchEvent
from pyctrl.kube.resource import CONFIGMAPS
from tests.unit.kube.raw_server import Action, Close, RawRequest, RawServer, Steps

HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n")
END = b"0\r\n\r\n"
EVENTS: list[WatchEvent] = [
    {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "1"}}},
    {"type": "MODIFIED", "object": {"metadata": {"name": "a", "resourceVersion": "2"},
                                    "data": {"x": "y" * 1500}}},
    {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "3"}}},
]
LINES = [orjson.dumps(e) + b"\n" for e in EVENTS]
A, B, C = LINES


def chunk(data: bytes, ext: bytes = b"") -> bytes:
    return b"%x%s\r\n%s\r\n" % (len(data), ext, data)


Answer = Sequence[bytes | threading.Event | Close]


class Watches:
    """A raw server answering each watch request with the next of ``answers``, and a client."""

    def __init__(self) -> None:
        self.answers: list[Answer] = []
        self.server = RawServer(self._script)
        self.client = RESTClient(KubeConfig.from_url(self.server.url, token="t"), qps=0,
                                 timeout=5.0)

    def _script(self, conn_no: int, req_no: int, req: RawRequest) -> Action:
        return Steps(self.answers.pop(0))

    def serve(self, *answers: Answer) -> Watches:
        self.answers = list(answers)
        return self

    def watch(self) -> list[WatchEvent]:
        return list(self.client.watch(CONFIGMAPS, "ns"))

    def stop(self) -> None:
        self.client.close()
        self.server.stop()


@pytest.fixture
def watches() -> Iterator[Watches]:
    w = Watches()
    yield w
    w.stop()


AGAIN = [HEAD + chunk(A) + END]  # a second watch, to see whether the connection is reused

FRAMINGS: dict[str, Answer] = {
    "one event per chunk": [HEAD, chunk(A), chunk(B), chunk(C), END],
    "all in one send with the headers": [HEAD + chunk(A) + chunk(B) + chunk(C) + END],
    "events split across chunks": [HEAD + chunk(A[:5]) + chunk(A[5:] + B[:700]),
                                    chunk(B[700:1200]), chunk(B[1200:] + C) + END],
    "several events in one chunk": [HEAD + chunk(A + B), chunk(C) + END],
    "extensions and trailers": [HEAD + chunk(A, b";a=1") + chunk(B + C, b" ; b"),
                                b"0;z\r\nX-Trailer: 1\r\n\r\n"],
    "sends cut in size lines and CRLFs": [
        HEAD + b"%x" % len(A + B) + b"\r", b"\n" + A + B + b"\r", b"\n", b"%x" % len(C),
        b"\r\n" + C, b"\r\n0", b"\r", b"\n\r", b"\n"],
    "final event without a newline": [HEAD + chunk(A + B) + chunk(C[:-1]) + END],
}


def no_urllib3_dechunking(*args: object, **kwargs: object) -> Iterator[bytes]:
    raise AssertionError("an identity-coded body went through urllib3's read_chunked")


@pytest.mark.parametrize("name", list(FRAMINGS))
def test_framings_give_the_events_and_keep_the_connection(
        watches: Watches, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(urllib3.HTTPResponse, "read_chunked", no_urllib3_dechunking)
    w = watches.serve(FRAMINGS[name], AGAIN)
    assert w.watch() == EVENTS
    assert w.watch() == [EVENTS[0]]
    assert w.server.connections == 1  # the exactly-read body let the connection be reused
    assert not w.server.closed[0].is_set()


def test_zero_chunk_only(watches: Watches) -> None:
    w = watches.serve([HEAD + END], AGAIN)
    assert w.watch() == []
    assert w.watch() == [EVENTS[0]]
    assert w.server.connections == 1


@pytest.mark.parametrize("answer", [
    [HEAD + chunk(A) + chunk(B)[:100], Close()],  # the server closes mid-chunk
    [HEAD + chunk(A), Close(b"%x\r\n" % len(B))],  # ... right after a size line
    [HEAD + chunk(A), Close()],  # ... between chunks, before the last one
], ids=["mid-chunk", "after-size-line", "between-chunks"])
def test_server_closing_early_ends_the_stream_quietly(watches: Watches,
                                                      answer: Answer) -> None:
    w = watches.serve(answer, AGAIN)
    assert w.watch() == [EVENTS[0]]
    assert w.watch() == [EVENTS[0]]  # a new connection
    assert w.server.connections == 2


@pytest.mark.parametrize("answer", [
    [HEAD + chunk(A) + b"zz\r\n" + chunk(B) + END],  # not a size
    [HEAD + chunk(A) + b"3\r\nabcd\r\n" + END],  # data longer than announced
    [HEAD + chunk(A) + END + b"HTTP/1.1 200 OK\r\n"],  # bytes beyond the body
], ids=["bad-size", "bad-crlf", "beyond"])
def test_bad_framing_ends_the_stream_and_closes_the_connection(watches: Watches,
                                                               answer: Answer) -> None:
    w = watches.serve(answer, AGAIN)
    assert w.watch() == [EVENTS[0]]
    assert w.server.closed[0].wait(5.0)  # the client closed it: not back in the pool
    assert w.watch() == [EVENTS[0]]
    assert w.server.connections == 2


def test_end_of_connection_in_the_trailers_still_delivers_everything(
        watches: Watches) -> None:
    w = watches.serve([HEAD + chunk(A) + chunk(C[:-1]) + b"0\r\n", Close()], AGAIN)
    assert w.watch() == [EVENTS[0], EVENTS[2]]
    assert w.watch() == [EVENTS[0]]
    assert w.server.connections == 2


@pytest.mark.parametrize("cut", [len(chunk(A)), len(chunk(A)) - 2],
                         ids=["whole-chunk", "chunk-without-its-crlf"])
def test_an_event_is_delivered_as_soon_as_its_chunk_arrived(watches: Watches, cut: int) -> None:
    # The server sends nothing more until the first event was read; a reader waiting for more
    # bytes would hit the read timeout (timeoutSeconds + the 1 s connect timeout) and end.
    watches.client.close()
    watches.client = RESTClient(KubeConfig.from_url(watches.server.url, token="t"), qps=0,
                                timeout=1.0)
    release = threading.Event()
    body = chunk(A) + chunk(B) + END
    w = watches.serve([HEAD + body[:cut], release, body[cut:]])
    events = iter(w.client.watch(CONFIGMAPS, "ns", timeout_seconds=1))
    try:
        assert next(events, None) == EVENTS[0]
    finally:
        release.set()
    assert list(events) == [EVENTS[1]]


def test_close_mid_stream_closes_the_connection(watches: Watches) -> None:
    hold = threading.Event()
    w = watches.serve([HEAD + chunk(A), hold, chunk(B) + END], AGAIN)
    stream = w.client.watch(CONFIGMAPS, "ns")
    events = iter(stream)
    try:
        assert next(events) == EVENTS[0]
        stream.close()
        assert list(events) == []
    finally:
        hold.set()
    assert w.server.closed[0].wait(5.0)
    assert w.watch() == [EVENTS[0]]
    assert w.server.connections == 2


def test_gzip_goes_through_urllib3(watches: Watches) -> None:
    zipped = gzip.compress(A + B + C)
    head = HEAD.replace(b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\n\r\n")
    w = watches.serve([head + chunk(zipped[:40]), chunk(zipped[40:]) + END])
    assert w.watch() == EVENTS
