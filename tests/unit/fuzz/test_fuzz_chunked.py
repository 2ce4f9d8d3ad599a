"""Fuzz: the watch stream's chunked-body decoder (pyctrl.kube.chunked.iter_chunks).

* Any valid chunked body (random chunk data, including CR/LF bytes; upper/lower-case hex and
  leading zeros; chunk extensions; bare LF line ends; trailers), read with any split into
  reads and any read size, decodes to exactly its chunks and reports an exact end.
* Any byte string whatsoever decodes the same way under every split: the same chunks, then
  the same outcome (the same end flag, or a ProtocolError); never another exception. One
  exception by contract: bytes after the body's end are only seen when they arrive in the
  same read as that end, so "not exact" (False) whole may be "exact" (True) split.
"""

from __future__ import annotations

import itertools
from collections.abc import Generator

from hypothesis import example, given
from hypothesis import strategies as st
from urllib3.exceptions import ProtocolError

from pyctrl.kube.chunked import iter_chunks
from tests.unit.kube.test_chunked import Pieces

Outcome = tuple[list[bytes], bool | str]


def decode(pieces: list[bytes], read_size: int) -> Outcome:
    """The chunks yielded, then the end flag or ``"error"`` (a ProtocolError)."""
    gen: Generator[bytes, None, bool] = iter_chunks(Pieces(pieces), read_size)
    out: list[bytes] = []
    try:
        while True:
            out.append(next(gen))
    except StopIteration as stop:
        return out, stop.value
    except ProtocolError:
        return out, "error"


def split(wire: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(c % (len(wire) + 1) for c in cuts), len(wire)]
    return [wire[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def chunked_bodies(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    chunks = draw(st.lists(st.binary(min_size=1, max_size=70), max_size=6))
    eol = st.sampled_from([b"\r\n", b"\n"])
    wire = b""
    for data in chunks:
        size = draw(st.sampled_from(["%x", "%X", "%04x"])) % len(data)
        ext = draw(st.sampled_from([b"", b";a=b", b" ;x", b';q="v"']))
        wire += size.encode() + ext + draw(eol) + data + draw(eol)
    wire += b"0" + draw(st.sampled_from([b"", b";last"])) + draw(eol)
    for i in range(draw(st.integers(0, 3))):
        wire += b"X-T%d: v" % i + draw(eol)
    wire += draw(eol)
    return wire, chunks


@given(chunked_bodies(), st.lists(st.integers(min_value=0), max_size=8),
       st.sampled_from([1, 2, 3, 5, 16, 65536]))
def test_any_split_of_a_valid_body_decodes_exactly(
    body: tuple[bytes, list[bytes]], cuts: list[int], read_size: int
) -> None:
    wire, chunks = body
    assert decode(split(wire, cuts), read_size) == (chunks, True)


@given(st.one_of(st.binary(max_size=120),
                 st.text(alphabet="0123456789abcdefABCDEF;= \r\nxX-+_", max_size=60)
                 .map(str.encode),
                 chunked_bodies().map(lambda b: b[0])
                 .flatmap(lambda w: st.tuples(st.just(w), st.integers(0, max(0, len(w) - 1)),
                                              st.binary(min_size=1, max_size=2)))
                 .map(lambda t: t[0][:t[1]] + t[2] + t[0][t[1] + 1:])),
       st.lists(st.integers(min_value=0), max_size=8), st.sampled_from([1, 2, 7, 65536]))
@example(b"-1\r\n", [], 65536)
@example(b"0x10\r\n", [], 65536)
@example(b"1_0\r\n", [], 65536)
@example(b" \r\n", [], 65536)
@example(b"\xd9\xa3\r\nx\r\n0\r\n\r\n", [], 65536)
@example(b"f" * 70000 + b"\r\n", [], 65536)
@example(b"5\r\nab", [1], 1)
@example(b"0\n\nA*\n", [3], 65536)  # found by hack/fuzz.py (atheris): bytes after the end
def test_any_bytes_decode_the_same_under_every_split(wire: bytes, cuts: list[int],
                                                     read_size: int) -> None:
    whole = decode([wire], 65536)
    chunks, outcome = decode(split(wire, cuts), read_size)
    assert chunks == whole[0]
    assert outcome == whole[1] or (whole[1] is False and outcome is True)
