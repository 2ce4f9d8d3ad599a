"""Fuzz: the parsers that face the network - the front end's request-head parser
(:func:`pyctrl.frontend.http.parse_head` with :func:`~pyctrl.frontend.http.body_length`)
and the lean transport's response reader (:func:`pyctrl.kube.response.read_response`).

* Any bytes as a request head: a :class:`RequestHead` whose fields satisfy RFC 9112 (a token
  method, lower-case token names, values without controls or surrounding whitespace, a
  digits-only Content-Length) and that parses back the same once written out again, or a
  400, or a 505 (a well-formed version but 1.0 and 1.1), or a 501 (a token method not in
  METHODS); the body length is a non-negative int or a 400/411/413. A valid head (random
  tokens, values, lengths) parses to its fields, with another method a 501, with another
  version a 505; one with a smuggling defect put in is a 400.
* Any bytes as an answer, read through any read size: a :class:`Response` (status >= 200,
  lower-case names, a body at most MAX_DECODED) or ProtocolError, DecodeError or NoAnswer;
  never another exception. A valid answer (Content-Length, chunked or close-delimited;
  identity, gzip or deflate) decodes to its body under every read size.

:func:`check_head` and :func:`check_answer` are the drivers hack/fuzz.py's atheris targets
(``request_head``, ``response``) reuse.
"""

from __future__ import annotations

import gzip
import io
import re
import zlib

from hypothesis import example, given
from hypothesis import strategies as st
from urllib3.exceptions import DecodeError, ProtocolError

from pyctrl.frontend.http import METHODS, RequestHead, body_length, parse_head
from pyctrl.kube.response import MAX_DECODED, NoAnswer, Response, read_response

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TCHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_VALUE_CHARS = "".join(chr(c) for c in [9, *range(0x20, 0x7f), *range(0x80, 0x100)])


def write_head(head: RequestHead) -> bytes:
    target = head.path + (f"?{head.query}" if head.query else "")
    lines = [f"{head.method} {target} {head.version}"]
    lines += [f"{name}: {value}" for name, value in head.headers.items()]
    return "\r\n".join(lines).encode("latin-1")


def check_head(data: bytes) -> RequestHead | None:
    """The request-head contract on ``data``; the head when it parsed."""
    head = parse_head(data)
    if not isinstance(head, RequestHead):
        line = data.decode("latin-1").split("\r\n")[0].split(" ")
        assert head[0] in (400, 501, 505), (data, head)
        if head[0] == 505:
            assert re.fullmatch(r"HTTP/[0-9]\.[0-9]", line[2]), data
            assert line[2] not in ("HTTP/1.0", "HTTP/1.1"), data
        elif head[0] == 501:
            assert _TOKEN.fullmatch(line[0]) and line[0] not in METHODS, data
        return None
    assert _TOKEN.fullmatch(head.method), data
    assert head.version in ("HTTP/1.0", "HTTP/1.1"), data
    for name, value in head.headers.items():
        assert _TOKEN.fullmatch(name) and name == name.lower(), (data, name)
        assert not re.search(r"[\x00-\x08\x0a-\x1f\x7f]", value), (data, value)
        assert value == value.strip(" \t"), (data, value)
    if "content-length" in head.headers:
        assert head.headers["content-length"].isascii()
        assert head.headers["content-length"].isdigit(), data
    length = body_length(head)
    if isinstance(length, int):
        assert length >= 0, data
    else:
        assert length[0] in (400, 411, 413), (data, length)
    assert parse_head(write_head(head)) == head, data
    return head


class _Trickle(io.RawIOBase):
    """A socket-like source: at most ``size`` bytes per read."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.at = data, size, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: memoryview) -> int:  # type: ignore[override]
        n = min(len(buf), self.size, len(self.data) - self.at)
        buf[:n] = self.data[self.at:self.at + n]
        self.at += n
        return n


def check_answer(data: bytes, read_size: int = 65536, method: str = "GET"
                 ) -> Response | None:
    """The response-reader contract on ``data``; the answer when it parsed."""
    reader = io.BufferedReader(_Trickle(data, read_size))
    try:
        answer, _ = read_response(reader, method)
    except (ProtocolError, DecodeError, NoAnswer):
        return None
    assert answer.status >= 200, data
    assert all(name == name.lower() for name in answer.headers), data
    assert len(answer.data) <= max(MAX_DECODED, len(data)), data
    return answer


_tokens = st.text(alphabet=_TCHARS, min_size=1, max_size=12)
_values = st.text(alphabet=_VALUE_CHARS, max_size=20).map(lambda v: v.strip(" \t"))
_targets = st.text(alphabet="".join(chr(c) for c in range(0x21, 0x7f) if chr(c) != "?"),
                   min_size=1, max_size=20)


@st.composite
def heads(draw: st.DrawFn) -> RequestHead:
    headers = draw(st.dictionaries(_tokens.map(str.lower).filter(
        lambda n: n not in ("content-length", "transfer-encoding")), _values, max_size=6))
    if draw(st.booleans()):
        headers["content-length"] = str(draw(st.integers(0, 10**12)))
    query = draw(st.sampled_from(["", "a=b", "timeout=10s&x"]))
    return RequestHead(draw(st.sampled_from(sorted(METHODS))), draw(_targets), query, headers,
                       draw(st.sampled_from(["HTTP/1.0", "HTTP/1.1"])))


@given(heads())
def test_a_valid_head_parses_to_its_fields(head: RequestHead) -> None:
    assert parse_head(write_head(head)) == head
    assert check_head(write_head(head)) == head


@given(heads(), _tokens.filter(lambda m: m not in METHODS))
def test_a_valid_head_with_another_method_is_a_501(head: RequestHead, method: str) -> None:
    wire = write_head(RequestHead(method, head.path, head.query, head.headers, head.version))
    assert parse_head(wire)[0] == 501  # type: ignore[index]
    check_head(wire)


@given(heads(), st.tuples(st.integers(0, 9), st.integers(0, 9)).filter(
    lambda v: v not in ((1, 0), (1, 1))))
def test_a_valid_head_with_another_version_is_a_505(head: RequestHead,
                                                    version: tuple[int, int]) -> None:
    wire = write_head(RequestHead(head.method, head.path, head.query, head.headers,
                                  f"HTTP/{version[0]}.{version[1]}"))
    assert parse_head(wire)[0] == 505  # type: ignore[index]
    check_head(wire)


_DEFECTS = [
    lambda w: w + b"\r\nContent-Length: 1\r\nContent-Length: 2",
    lambda w: w + b"\r\nContent-Length : 1",
    lambda w: w + b"\r\nX-A: 1\r\n\tfolded",
    lambda w: w + b"\r\nContent-Length: +1",
    lambda w: w + b"\r\nContent-Length: 1_0",
    lambda w: w + b"\r\nX-A: a\nContent-Length: 3",
    lambda w: b" " + w.partition(b" ")[2],  # no method
]


@given(heads(), st.integers(0, len(_DEFECTS) - 1))
def test_a_smuggling_defect_is_a_400(head: RequestHead, which: int) -> None:
    wire = write_head(RequestHead(head.method, head.path, head.query,
                                  {k: v for k, v in head.headers.items()
                                   if k != "content-length"}, head.version))
    reply = parse_head(_DEFECTS[which](wire))
    assert not isinstance(reply, RequestHead) and reply[0] == 400


@given(st.one_of(
    st.binary(max_size=200),
    st.text(alphabet=_TCHARS + " :\t\r\n/?+_-", max_size=120).map(str.encode),
    heads().map(write_head).flatmap(
        lambda w: st.tuples(st.just(w), st.integers(0, len(w)), st.binary(max_size=3)))
    .map(lambda t: t[0][:t[1]] + t[2] + t[0][t[1]:])))
@example(b"GET / HTTP/1.1\r\nContent-Length: " + b"9" * 5000)
@example(b"GET / HTTP/1.1\r\nContent-Length: \xb2")
@example(b"GET /a?b?c HTTP/1.1")
def test_any_bytes_are_a_head_or_a_refusal(data: bytes) -> None:
    check_head(data)


@st.composite
def answers(draw: st.DrawFn) -> tuple[bytes, bytes]:
    body = draw(st.binary(max_size=300))
    coding = draw(st.sampled_from(["identity", "gzip", "deflate", "raw-deflate"]))
    wire = {"identity": body, "gzip": gzip.compress(body), "deflate": zlib.compress(body),
            "raw-deflate": zlib.compress(body)[2:-4]}[coding]
    lines = [b"HTTP/1.1 200 OK"]
    if coding != "identity":
        lines.append(b"Content-Encoding: " + coding.removeprefix("raw-").encode())
    framing = draw(st.sampled_from(["length", "chunked", "close"]))
    if framing == "length":
        lines.append(b"Content-Length: %d" % len(wire))
    elif framing == "chunked":
        lines.append(b"Transfer-Encoding: chunked")
        cut = draw(st.integers(0, len(wire)))
        parts = [p for p in (wire[:cut], wire[cut:]) if p]
        wire = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
    else:
        lines.append(b"Connection: close")
    if draw(st.booleans()):
        lines.insert(1, b"X-Folded: a\r\n b")
    if draw(st.booleans()):
        lines.insert(0, b"HTTP/1.1 100 Continue\r\n")
    return b"\r\n".join(lines) + b"\r\n\r\n" + wire, body


@given(answers(), st.sampled_from([1, 3, 64, 65536]))
def test_a_valid_answer_decodes_to_its_body(answer: tuple[bytes, bytes], read_size: int
                                           ) -> None:
    wire, body = answer
    got = check_answer(wire, read_size)
    assert got is not None and got.data == body


@given(st.one_of(
    st.binary(max_size=300),
    answers().flatmap(lambda a: st.tuples(st.just(a[0]), st.integers(0, len(a[0])),
                                          st.binary(max_size=3)))
    .map(lambda t: t[0][:t[1]] + t[2] + t[0][t[1] + 1:]),
    answers().flatmap(lambda a: st.tuples(st.just(a[0]), st.integers(0, len(a[0]))))
    .map(lambda t: t[0][:t[1]])),
    st.sampled_from([1, 7, 65536]), st.sampled_from(["GET", "HEAD", "POST"]))
@example(b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", 65536, "GET")
@example(b"HTTP/1.1 200 OK\r\nContent-Length: 9" + b"9" * 5000 + b"\r\n\r\n", 65536, "GET")
@example(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",
         65536, "GET")
@example(b"HTTP/1.1 200 OK\r\n\tfold\r\n\r\n", 65536, "GET")
@example(b"HTTP/1.1 101 Switching\r\n\r\n", 65536, "GET")
def test_any_bytes_are_an_answer_or_a_protocol_error(data: bytes, read_size: int,
                                                     method: str) -> None:
    check_answer(data, read_size, method)
