"""iter_chunks / chunk_size: chunked framing from arbitrary read boundaries, exactly."""

from __future__ import annotations

import itertools
from collections.abc import Generator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from urllib3.exceptions import ProtocolError

from pyctrl.kube.chunked import chunk_size, iter_chunks

DATA = [b"a" * 17, b'{"type":"ADDED"}\n', b"x", b"\r\n\r\n0\r\n"]
WIRE = (b"11;name=value\r\n" + DATA[0] + b"\r\n"
        + b"%x\r\n%s\r\n" % (len(DATA[1]), DATA[1])
        + b"1 ; e\r\n" + DATA[2] + b"\n"  # whitespace before an extension, bare LF after data
        + b"7\r\n" + DATA[3] + b"\r\n"
        + b"0;last\r\nX-Trailer: 1\r\nY: 2\r\n\r\n")


class Pieces:
    """A read1-like source serving ``pieces`` in order, at most ``n`` bytes per call."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = [p for p in pieces if p]
        self.reads = 0

    def __call__(self, n: int) -> bytes:
        self.reads += 1
        if not self.pieces:
            return b""
        head = self.pieces[0]
        if len(head) > n:
            self.pieces[0] = head[n:]
            return head[:n]
        self.pieces.pop(0)
        return head


def run(gen: Generator[bytes, None, bool]) -> tuple[list[bytes], bool]:
    out: list[bytes] = []
    while True:
        try:
            out.append(next(gen))
        except StopIteration as stop:
            return out, stop.value


def cut(wire: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(cuts), len(wire)]
    return [wire[a:b] for a, b in itertools.pairwise(bounds)]


def test_whole_body_in_one_read() -> None:
    assert run(iter_chunks(Pieces([WIRE]), 65536)) == (DATA, True)


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_small_reads(size: int) -> None:
    assert run(iter_chunks(Pieces([WIRE]), size)) == (DATA, True)


def test_every_single_split_point() -> None:
    # One boundary at each offset: inside size lines, extensions, CRLFs, data and trailers.
    for i in range(len(WIRE) + 1):
        assert run(iter_chunks(Pieces([WIRE[:i], WIRE[i:]]), 65536)) == (DATA, True), i


@given(st.lists(st.integers(min_value=0, max_value=len(WIRE)), max_size=10))
def test_any_split_gives_the_same_chunks(cuts: list[int]) -> None:
    assert run(iter_chunks(Pieces(cut(WIRE, cuts)), 65536)) == (DATA, True)


def test_a_chunk_is_yielded_before_its_crlf_is_read() -> None:
    # Latency: no read may wait for bytes the chunk does not need.
    source = Pieces([b"3\r\nabc", b"\r\n0\r\n\r\n"])
    gen = iter_chunks(source, 65536)
    assert next(gen) == b"abc"
    assert source.pieces == [b"\r\n0\r\n\r\n"]  # not read yet
    assert run(gen) == ([], True)


def test_large_chunk_over_many_reads() -> None:
    big = bytes(range(256)) * 4000
    wire = b"%x\r\n%s\r\n0\r\n\r\n" % (len(big), big)
    assert run(iter_chunks(Pieces([wire]), 4096)) == ([big], True)


def test_zero_chunk_only() -> None:
    assert run(iter_chunks(Pieces([b"0\r\n\r\n"]), 65536)) == ([], True)


@pytest.mark.parametrize("wire", [
    b"3\r\nabc\r\n0\r\n",  # closed before the trailers' empty line
    b"0\r\nX-Trailer: 1",  # closed inside a trailer
    b"0\r\n\r\nHTTP/1.1 200 OK\r\n",  # bytes beyond the body
])
def test_body_complete_but_connection_not_reusable(wire: bytes) -> None:
    assert run(iter_chunks(Pieces([wire]), 65536))[1] is False


@pytest.mark.parametrize(("wire", "message"), [
    (b"", "before the last chunk"),
    (b"3\r\nabc\r\n", "before the last chunk"),
    (b"3\r\nab", "inside a chunk"),
    (b"3\r\nabc", "not followed by CRLF"),
    (b"3\r\nabcX\r\n0\r\n\r\n", "not followed by CRLF"),
    (b"3\r\nabc\rX\n0\r\n\r\n", "not followed by CRLF"),
    (b"zz\r\n", "invalid chunk size"),
    (b"\r\n", "invalid chunk size"),
    (b"-3\r\nabc\r\n", "invalid chunk size"),
    (b"0x3\r\nabc\r\n", "invalid chunk size"),
    (b"1_0\r\n", "invalid chunk size"),
    (b"1" * 70000, "line too long"),
    (b"0\r\n" + b"X: 1\r\n" * 101 + b"\r\n", "trailer fields"),
])
def test_malformed_framing_raises_protocol_error(wire: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        run(iter_chunks(Pieces([wire]), 1024))


def test_chunks_before_an_error_are_yielded() -> None:
    gen = iter_chunks(Pieces([b"3\r\nabc\r\n2\r\nd"]), 65536)
    assert next(gen) == b"abc"
    with pytest.raises(ProtocolError):
        next(gen)


@pytest.mark.parametrize(("line", "size"), [
    (b"0\r\n", 0), (b"1A\r\n", 26), (b"ff;x=1;y\r\n", 255), (b"10 ;x\n", 16), (b"7", 7),
])
def test_chunk_size(line: bytes, size: int) -> None:
    assert chunk_size(line) == size
