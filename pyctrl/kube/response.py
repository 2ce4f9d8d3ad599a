"""Reading one HTTP/1.1 answer (RFC 9112) from a buffered reader: the lean transport's parser.

Contract of :func:`read_response` (``reader`` a buffered binary reader on a socket,
``method`` the request's method): it reads exactly one whole answer and returns it as a
:class:`Response` with whether the connection may serve another request.

* Status line, then header fields (names lower-cased, repeated ones joined with ``", "``,
  obsolete line folding joined with a space). ``1xx`` interim answers are skipped; a ``101``
  is a :class:`~urllib3.exceptions.ProtocolError` (nothing here upgrades).
* Reuse: HTTP/1.1 unless ``Connection: close``; HTTP/1.0 only with ``Connection:
  keep-alive``; never after a body delimited by the end of the connection.
* Body: none for HEAD, 204 and 304; else chunked (trailer fields read and dropped), else
  ``Content-Length`` bytes (repeated identical values tolerated, as RFC 9110 and urllib3 do;
  conflicting ones, or one that is not ``1*DIGIT`` (``+5``, ``-1``, ``1_0``), are a
  ProtocolError), else everything up to the
  end of the connection. A ``gzip``/``x-gzip`` or ``deflate`` (zlib or raw) Content-Encoding
  is decoded (a body that does not decode, or inflates past :data:`MAX_DECODED` (64 MiB;
  we ask for identity, so only a broken or hostile peer codes at all), raises
  :class:`~urllib3.exceptions.DecodeError`, memory bounded by the cap); any other coding is
  returned as it came.
* Memory is taken as the bytes arrive (at most 1 MiB ahead): a size from the answer never
  allocates by itself. Lines are at most 64 KiB, header fields at most 100.
* The peer closing or resetting the connection before the first byte of the answer raises
  :class:`NoAnswer` (a :class:`ConnectionResetError`; the transport decides from it whether
  the request may be resent). A malformed answer, or one the connection ends inside, raises
  ProtocolError; errors of the reader (timeouts, resets after the first byte) propagate.
"""

from __future__ import annotations

import re
import ssl
import zlib
from typing import BinaryIO

from urllib3.exceptions import DecodeError, ProtocolError

from pyctrl.kube.chunked import chunk_size

__all__ = ["MAX_DECODED", "PEER_GONE", "NoAnswer", "Response", "read_response"]

MAX_DECODED = 64 << 20  # the most a content-coded body inflates to
_MAX_LINE = 65536
_READ_STEP = 1 << 20  # the most a body read allocates ahead of the bytes it gets
_MAX_HEADERS = 100
_END_OF_HEADERS = (b"\r\n", b"\n")
_DIGITS = re.compile(r"[0-9]+")
# The errors of a socket whose peer closed or reset the connection.
PEER_GONE = (ConnectionError, ssl.SSLEOFError, ssl.SSLZeroReturnError)


class Response:
    """A complete answer: ``status``, ``headers`` (lower-case names; repeated ones joined
    with ``", "``) and the decoded body ``data``."""

    __slots__ = ("data", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], data: bytes) -> None:
        self.status = status
        self.headers = headers
        self.data = data

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


class NoAnswer(ConnectionResetError):
    """The peer closed or reset the connection before the first byte of an answer."""


def read_response(reader: BinaryIO, method: str) -> tuple[Response, bool]:
    """Read one whole answer; also whether the connection may be reused."""
    try:
        line = reader.readline(_MAX_LINE + 1)
    except PEER_GONE as exc:
        raise NoAnswer(f"the server closed the connection without an answer: {exc}") from exc
    if not line:
        raise NoAnswer("the server closed the connection without an answer")
    while True:
        version, status = _status_line(line)
        headers = _read_headers(reader)
        if status >= 200 or status == 101:
            break
        line = reader.readline(_MAX_LINE + 1)  # 1xx: an interim answer, the real one follows
        if not line:
            raise ProtocolError("the connection closed after an interim (1xx) answer")
    if status == 101:
        raise ProtocolError("unexpected 101 Switching Protocols")
    connection = headers.get("connection")
    if version == "HTTP/1.0":
        keep_alive = connection is not None and "keep-alive" in connection.lower()
    else:
        keep_alive = connection is None or "close" not in connection.lower()
    if method == "HEAD" or status in (204, 304):
        return Response(status, headers, b""), keep_alive
    encoding = headers.get("transfer-encoding")
    if encoding is not None and "chunked" in encoding.lower():
        body = _read_chunked(reader)
    elif (length_header := headers.get("content-length")) is not None:
        length = _content_length(length_header)
        body = _read_upto(reader, length) if length else b""
        if len(body) < length:
            raise ProtocolError(
                f"incomplete answer: {len(body)} bytes read, {length - len(body)} more expected")
    else:
        body = reader.read()  # delimited by the end of the connection
        keep_alive = False
    coding = headers.get("content-encoding")
    if coding is not None and body:
        body = _decode(coding, body)
    return Response(status, headers, body), keep_alive


def _status_line(line: bytes) -> tuple[str, int]:
    if len(line) > _MAX_LINE or not line.endswith(b"\n"):
        raise ProtocolError(f"malformed status line {line[:80]!r}")
    parts = line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or len(parts[1]) != 3:
        raise ProtocolError(f"malformed status line {line[:80]!r}")
    try:
        status = int(parts[1])
    except ValueError:
        raise ProtocolError(f"malformed status line {line[:80]!r}") from None
    if status < 100:
        raise ProtocolError(f"malformed status line {line[:80]!r}")
    return parts[0].decode("latin-1"), status


def _read_headers(reader: BinaryIO) -> dict[str, str]:
    headers: dict[str, str] = {}
    last: str | None = None
    for _ in range(_MAX_HEADERS + 1):
        line = reader.readline(_MAX_LINE + 1)
        if line in _END_OF_HEADERS:
            return headers
        if not line.endswith(b"\n"):
            if len(line) > _MAX_LINE:
                raise ProtocolError("header line too long")
            raise ProtocolError("the connection closed inside the answer's headers")
        text = line.decode("latin-1")
        if text[0] in " \t":  # obsolete line folding: continues the previous value
            if last is None:
                raise ProtocolError("malformed header line")
            headers[last] = f"{headers[last]} {text.strip()}"
            continue
        name, sep, value = text.partition(":")
        if not sep:
            raise ProtocolError(f"malformed header line {text[:80]!r}")
        key = name.strip().lower()
        value = value.strip()
        previous = headers.get(key)
        headers[key] = value if previous is None else f"{previous}, {value}"
        last = key
    raise ProtocolError(f"more than {_MAX_HEADERS} headers")


def _content_length(value: str) -> int:
    # Repeated identical values ("12, 12") are tolerated, as by RFC 9110 and urllib3.
    values = {v.strip(" \t") for v in value.split(",")}
    if len(values) != 1:
        raise ProtocolError(f"conflicting Content-Length {value[:80]!r}")
    length = values.pop()
    if not _DIGITS.fullmatch(length) or len(length) > 18:
        raise ProtocolError(f"invalid Content-Length {value[:80]!r}")
    return int(length)


def _read_upto(reader: BinaryIO, size: int) -> bytes:
    """``size`` bytes, or fewer at the end of the connection. Memory is taken as the bytes
    arrive: ``read(n)`` allocates n bytes at once, and a size comes from the answer (a chunk
    or Content-Length of 2**62 would be a MemoryError, not a protocol error)."""
    if size <= _READ_STEP:
        return reader.read(size)
    parts: list[bytes] = []
    have = 0
    while have < size:
        part = reader.read(min(_READ_STEP, size - have))
        if not part:
            break
        parts.append(part)
        have += len(part)
    return b"".join(parts)


def _read_chunked(reader: BinaryIO) -> bytes:
    parts: list[bytes] = []
    while True:
        line = reader.readline(_MAX_LINE + 1)
        if not line.endswith(b"\n"):
            raise ProtocolError("the connection closed inside a chunked body")
        size = chunk_size(line)
        if size == 0:
            break
        chunk = _read_upto(reader, size)
        if len(chunk) < size:
            raise ProtocolError("the connection closed inside a chunk")
        parts.append(chunk)
        if reader.readline(_MAX_LINE + 1) not in _END_OF_HEADERS:
            raise ProtocolError("a chunk is not followed by CRLF")
    while True:  # trailer fields, up to the final empty line
        line = reader.readline(_MAX_LINE + 1)
        if not line or line in _END_OF_HEADERS:
            break
        if not line.endswith(b"\n"):
            raise ProtocolError("trailer line too long")
    if len(parts) == 1:
        return parts[0]
    return b"".join(parts)


def _decode(coding: str, body: bytes) -> bytes:
    coding = coding.strip().lower()
    try:
        if coding in ("gzip", "x-gzip"):
            return _inflate(coding, body, 16 + zlib.MAX_WBITS)
        if coding == "deflate":
            try:
                return _inflate(coding, body, zlib.MAX_WBITS)
            except zlib.error:
                return _inflate(coding, body, -zlib.MAX_WBITS)  # raw deflate, no zlib header
    except zlib.error as exc:
        raise DecodeError(f"cannot decode a {coding} body: {exc}") from exc
    return body  # identity, or a coding urllib3 would not decode either


def _inflate(coding: str, body: bytes, wbits: int) -> bytes:
    """``body`` inflated, at most :data:`MAX_DECODED` bytes of it (a DecodeError past)."""
    inflater = zlib.decompressobj(wbits)
    data = inflater.decompress(body, MAX_DECODED)
    if inflater.unconsumed_tail:
        raise DecodeError(f"a {coding} body inflates past {MAX_DECODED >> 20} MiB "
                          f"({len(body)} bytes sent); refused")
    if not inflater.eof:
        raise zlib.error("incomplete or truncated stream")
    return data
