"""The response reader's bounds: a content-coded body inflates at most MAX_DECODED bytes,
and Content-Length is 1*DIGIT."""

from __future__ import annotations

import gzip
import io
import zlib

import pytest
from urllib3.exceptions import DecodeError, ProtocolError

from pyctrl.kube import response
from pyctrl.kube.response import read_response


def _answer(body: bytes, coding: str) -> io.BytesIO:
    return io.BytesIO(b"HTTP/1.1 200 OK\r\nContent-Encoding: " + coding.encode()
                      + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_bomb_past_the_cap_is_a_decode_error(coding: str, monkeypatch: pytest.MonkeyPatch
                                               ) -> None:
    monkeypatch.setattr(response, "MAX_DECODED", 1 << 20)
    zeros = b"\0" * (4 << 20)
    body = gzip.compress(zeros) if coding == "gzip" else zlib.compress(zeros)
    with pytest.raises(DecodeError, match="inflates past 1 MiB"):
        read_response(_answer(body, coding), "GET")


def test_the_default_cap_refuses_a_256_mib_bomb() -> None:
    inflater = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b"\0" * (1 << 20)
    body = b"".join(inflater.compress(chunk) for _ in range(256)) + inflater.flush()
    assert len(body) < 300_000
    with pytest.raises(DecodeError, match="inflates past 64 MiB"):
        read_response(_answer(body, "gzip"), "GET")


def test_a_body_at_the_cap_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(response, "MAX_DECODED", 1 << 20)
    data = b"x" * (1 << 20)
    got, _ = read_response(_answer(gzip.compress(data), "gzip"), "GET")
    assert got.data == data


def test_a_truncated_gzip_body_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="cannot decode"):
        read_response(_answer(gzip.compress(b"x" * 1000)[:-12], "gzip"), "GET")


@pytest.mark.parametrize("value", [b"+5", b"1_0", b"-1", b"0x5", b"", b"5 5", b"9" * 30])
def test_a_content_length_not_digits_is_a_protocol_error(value: bytes) -> None:
    reader = io.BytesIO(b"HTTP/1.1 200 OK\r\nContent-Length: " + value + b"\r\n\r\nhello")
    with pytest.raises(ProtocolError, match="Content-Length"):
        read_response(reader, "GET")


def test_whitespace_around_a_content_length_is_dropped() -> None:
    reader = io.BytesIO(b"HTTP/1.1 200 OK\r\nContent-Length:  5 \r\n\r\nhello")
    assert read_response(reader, "GET")[0].data == b"hello"
