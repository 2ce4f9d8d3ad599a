"""The little HTTP/1.1 the front end speaks: parse a request head, build a response.

Contract:

* :func:`parse_head` takes the bytes of a request line and headers (without the blank line
  that ends them) and returns a :class:`RequestHead`, or a :data:`Reply`: 400 for a
  malformed head, else 505 for a version other than ``HTTP/1.0`` and ``HTTP/1.1``, else 501
  for a method not in :data:`METHODS` (case matters: ``get`` is not ``GET``). Header names
  are lower-cased; a repeated header keeps its last value.
  As RFC 9112 asks of a server (a proxy in front could frame the request otherwise, the
  smuggling vectors), these are malformed: a request line that is not exactly ``method SP
  target SP HTTP/d.d`` with a token for the method (so never empty) and a target without
  controls; a field name that is not a token (whitespace before the colon, section 5.1);
  a line starting with whitespace (obs-fold, section 5.2); a field value with a control
  character other than HTAB (a bare CR or LF, NUL); a ``Content-Length`` that is not
  ``1*DIGIT`` once the whitespace around the value is dropped (``+5``, ``1_0``, ``0x5``;
  `` 5`` is ``5``), or repeated with a different value (identical repeats are one value, as
  RFC 9110 section 8.6 allows).
* :func:`take_head` finds a request head at the start of a buffer once its blank line
  arrived and takes it (the blank line too) out of the buffer, parsed by :func:`parse_head`;
  a head (complete or not) above ``max_bytes`` is answered 431 and left in the buffer;
  None while it is incomplete and within the bound.
* :func:`wants_keep_alive` is the client's side of persistence (RFC 9112 section 9.3): an
  HTTP/1.1 request keeps the connection unless its ``Connection`` header lists ``close``;
  an HTTP/1.0 request only when it lists ``keep-alive``.
* :func:`body_length` applies the framing rules the servers share: no chunked bodies (411),
  ``Content-Length`` required except for GET/HEAD (411), digits only (400), more than 18
  digits 413.
* :func:`response` is the bytes of a response with a ``Content-Length`` (and the reply's
  extra header fields, when it has a fourth element, after ``Content-Type``): with
  ``keep_alive=False`` (the default) it says ``Connection: close``; with ``keep_alive=True``
  it says nothing for an HTTP/1.1 request (persistence is the default there) and
  ``Connection: keep-alive`` for an HTTP/1.0 one. Whether a connection is kept is the
  server's decision (:mod:`pyctrl.frontend.connection`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus

__all__ = ["METHODS", "Handler", "Headers", "Reply", "Request", "RequestHead", "Route",
           "body_length", "parse_head", "response", "take_head", "text", "wants_keep_alive"]

Headers = tuple[tuple[str, str], ...]  # extra response header fields, in order
# status, body, content type[, extra header fields]
Reply = tuple[int, bytes, str] | tuple[int, bytes, str, Headers]


def text(code: int, message: str) -> Reply:
    """A plain-text reply."""
    return code, message.encode(), "text/plain; charset=utf-8"


def response(reply: Reply, *, keep_alive: bool = False, version: str = "HTTP/1.1") -> bytes:
    """The bytes of an HTTP/1.1 response to a ``version`` request (see module docstring)."""
    code, body, content_type = reply[0], reply[1], reply[2]
    fields = reply[3] if len(reply) == 4 else ()
    extra = "".join(f"{name}: {value}\r\n" for name, value in fields)
    if not keep_alive:
        connection = "Connection: close\r\n"
    else:
        connection = "Connection: keep-alive\r\n" if version == "HTTP/1.0" else ""
    head = (f"HTTP/1.1 {code} {HTTPStatus(code).phrase}\r\nContent-Type: {content_type}\r\n"
            f"{extra}Content-Length: {len(body)}\r\n{connection}\r\n")
    return head.encode("latin-1") + body


@dataclass(frozen=True, slots=True)
class RequestHead:
    """A parsed request line and headers."""

    method: str
    path: str  # without the query string
    query: str  # after "?", "" when none
    headers: Mapping[str, str]  # lower-case names
    version: str = "HTTP/1.1"  # "HTTP/1.0" or "HTTP/1.1"


@dataclass(frozen=True, slots=True)
class Request:
    """A complete request, as a worker thread sees it."""

    head: RequestHead
    body: bytes
    peer: str  # the client's address
    received: float = 0.0  # monotonic seconds when the whole request was read

    @property
    def method(self) -> str:
        return self.head.method

    @property
    def path(self) -> str:
        return self.head.path


Handler = Callable[[Request], Reply]
"""Runs on a worker thread with the complete request; may block (API calls)."""

Route = Callable[[RequestHead], "Handler | Reply"]
"""Runs on the event loop as soon as the head is read, so it must be cheap and never block:
a :data:`Handler` to run with the body, or a :data:`Reply` answered at once (after reading
and dropping a bounded amount of the body, so the client sees it instead of a reset)."""


# RFC 9110 section 5.6.2: tchar.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TARGET = re.compile(r"[\x21-\x7e\x80-\xff]+")  # no whitespace, no controls
_VERSION = re.compile(r"HTTP/[0-9]\.[0-9]")  # RFC 9112 section 2.3: HTTP-version
_VERSIONS = ("HTTP/1.0", "HTTP/1.1")
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE",
                     "PATCH"})
"""The methods the parser passes to a route: RFC 9110 section 9.3's and PATCH (RFC 5789).
Which of them a server serves is its route's decision (405 for the others)."""
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # controls but HTAB
_DIGITS = re.compile(r"[0-9]+")


def parse_head(data: bytes) -> RequestHead | Reply:
    """Parse the request line and headers (see module docstring)."""
    lines = data.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if (len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not _TARGET.fullmatch(parts[1])
            or not _VERSION.fullmatch(parts[2])):
        return text(400, "bad request line")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not _TOKEN.fullmatch(name):
            return text(400, "bad header line")  # also obs-fold and "Name :"
        value = value.strip(" \t")
        if _BAD_VALUE.search(value):
            return text(400, "bad header value")
        key = name.lower()
        if key == "content-length" and (not _DIGITS.fullmatch(value)
                                        or headers.get(key, value) != value):
            return text(400, "bad Content-Length")
        headers[key] = value
    # The whole head is well-formed: only now the version and the method. Another minor
    # version of 1 would be read as 1.1 (RFC 9112 section 2.3 allows that), but nothing
    # past 1.1 exists, so it is a client or a fuzzer speaking a protocol we do not: 505,
    # as for any other major version (RFC 9110 section 15.6.6).
    if parts[2] not in _VERSIONS:
        return text(505, "HTTP version not supported")
    # A token we do not know is a well-formed request for a method this server does not
    # implement, which RFC 9110 section 9.1 answers 501 (400 is for a malformed request,
    # 405 for a known method the resource refuses: the route's answer).
    if parts[0] not in METHODS:
        return text(501, "method not implemented")
    path, _, query = parts[1].partition("?")
    return RequestHead(parts[0], path, query, headers, parts[2])


def take_head(buf: bytearray, start: int, max_bytes: int) -> RequestHead | Reply | None:
    """The head at the start of ``buf``, taken out of it (see the module docstring); the
    blank line is searched from ``start`` (what was searched before, less 3 bytes)."""
    end = buf.find(b"\r\n\r\n", start)
    if end < 0:
        return text(431, "request headers too large") if len(buf) > max_bytes else None
    if end > max_bytes:
        return text(431, "request headers too large")
    head = parse_head(bytes(buf[:end]))
    del buf[:end + 4]
    return head


def wants_keep_alive(head: RequestHead) -> bool:
    """Whether the client asked to keep the connection (see module docstring)."""
    tokens = {t.strip().lower() for t in head.headers.get("connection", "").split(",")}
    if head.version == "HTTP/1.0":
        return "keep-alive" in tokens
    return "close" not in tokens


def body_length(head: RequestHead) -> int | Reply:
    """The declared body length, or the error reply (see module docstring)."""
    if "transfer-encoding" in head.headers:
        return text(411, "Content-Length required")
    value = head.headers.get("content-length")
    if value is None:
        return 0 if head.method in ("GET", "HEAD") else text(411, "Content-Length required")
    if not _DIGITS.fullmatch(value):  # parse_head refuses these; a head built otherwise
        return text(400, "bad Content-Length")
    if len(value) > 18:  # past any body limit (and int() refuses over 4300 digits)
        return text(413, "request body too large")
    return int(value)
