"""HTTP/1.1 chunked transfer coding (RFC 9112 section 7.1), read incrementally.

Contract:

* :func:`chunk_size` parses a chunk size line (``1a;name=value\\r\\n``): hex digits, optional
  whitespace, optional extensions (ignored). Anything else (no digits, a sign, ``0x``, ``_``,
  a size beyond 2**63 - 1) raises urllib3's :class:`~urllib3.exceptions.ProtocolError`.
* :func:`iter_chunks` de-chunks a body from ``read(n)``, a ``read1``-like callable that returns
  at most ``n`` bytes, blocks only while nothing is available, and returns ``b""`` at the end of
  the connection. Each chunk's data is yielded as soon as all its bytes were read: the CRLF
  after it is checked only when the next chunk is wanted, and no read ever waits for bytes a
  chunk does not need (a watch event is delivered the moment its chunk arrived). A bare LF is
  accepted where a CRLF is due. The generator returns ``True`` when the body ended exactly:
  the last chunk, the trailer section and its empty line were read and no byte beyond them
  (the connection may then serve another request); ``False`` when the connection closed
  inside the trailer section or bytes following the body came in the same read as its end
  (bytes that arrive in a later read are not waited for, so they can not be seen).
  Malformed framing, an over-long line (more than 64 KiB), more than 100 trailer fields or
  an end of the connection before the last chunk raise
  :class:`~urllib3.exceptions.ProtocolError`; errors of ``read`` propagate.
"""

from __future__ import annotations

from collections.abc import Callable, Generator

from urllib3.exceptions import ProtocolError

__all__ = ["chunk_size", "iter_chunks"]

_MAX_LINE = 65536
_MAX_TRAILERS = 100
# Go's net/http refuses a chunk size beyond 64 bits too; without a bound, a size line of
# thousands of hex digits became an int whose error message could not even be formatted.
_MAX_CHUNK = 2**63 - 1
_HEX_DIGITS = b"0123456789abcdefABCDEF"
_HEX_DIGITS_CR = _HEX_DIGITS + b"\r"
_CRLF = b"\r\n"
_LINE_ENDS = (b"", b"\r")  # what may stand before the "\n" ending an empty line

Read = Callable[[int], bytes]


def chunk_size(line: bytes) -> int:
    """The size announced by a chunk size line (with or without its line ending)."""
    digits = line.split(b";", 1)[0].strip()
    if not digits or digits.translate(None, _HEX_DIGITS):
        raise ProtocolError(f"invalid chunk size line {line[:80]!r}")
    size = int(digits, 16)
    if size > _MAX_CHUNK:
        raise ProtocolError(f"chunk size too large in {line[:80]!r}")
    return size


def iter_chunks(read: Read, read_size: int) -> Generator[bytes, None, bool]:
    """Yield the data of each chunk read through ``read`` (see module docstring)."""
    buf = b""
    pos = 0  # buf[:pos] is consumed
    while True:
        nl = buf.find(b"\n", pos)
        if nl < 0:
            if pos == len(buf):  # all consumed: the common case, one read per chunk
                buf, pos = read(read_size), 0
                nl = buf.find(b"\n")
            if nl < 0:
                buf, nl = _read_line(read, read_size, buf[pos:])
                pos = 0
                if nl < 0:
                    raise ProtocolError("the connection closed before the last chunk")
        line = buf[pos:nl]
        if line.translate(None, _HEX_DIGITS_CR):  # extensions, whitespace or garbage
            size = chunk_size(line)
        else:  # hex digits, then CR or not
            try:
                size = int(line, 16)
            except ValueError:  # no digit, or a CR inside
                raise ProtocolError(f"invalid chunk size line {line[:80]!r}") from None
            if size > _MAX_CHUNK:
                raise ProtocolError(f"chunk size too large in {line[:80]!r}")
        pos = nl + 1
        if size == 0:
            return _trailers(read, read_size, buf, pos)
        end = pos + size
        if end > len(buf):
            buf = _read_exactly(read, read_size, buf[pos:], size)
            pos, end = 0, size
        yield buf[pos:end]  # no copy when buf holds exactly this chunk's data
        if buf.startswith(_CRLF, end):
            pos = end + 2
        else:  # not (all) read yet, or a bare LF, or garbage
            nl = buf.find(b"\n", end)
            if nl < 0:
                buf, nl = _read_line(read, read_size, buf[end:])
                end = 0
            if nl < 0 or buf[end:nl] not in _LINE_ENDS:
                raise ProtocolError("a chunk is not followed by CRLF")
            pos = nl + 1


def _trailers(read: Read, read_size: int, buf: bytes, pos: int) -> bool:
    for _ in range(_MAX_TRAILERS + 1):
        nl = buf.find(b"\n", pos)
        if nl < 0:
            buf, nl = _read_line(read, read_size, buf[pos:])
            pos = 0
            if nl < 0:
                return False  # closed inside the trailers: the body itself is complete
        line = buf[pos:nl]
        pos = nl + 1
        if line in _LINE_ENDS:
            return pos == len(buf)
    raise ProtocolError(f"more than {_MAX_TRAILERS} trailer fields")


def _read_line(read: Read, read_size: int, rest: bytes) -> tuple[bytes, int]:
    """Read after ``rest`` (which holds no newline) until a newline: the bytes and the index
    of that newline, or ``-1`` (and what was read) at the end of the connection."""
    parts = [rest]
    have = len(rest)
    while True:
        if have > _MAX_LINE:
            raise ProtocolError("chunked body line too long")
        more = read(read_size)
        if not more:
            return b"".join(parts), -1
        nl = more.find(b"\n")
        parts.append(more)
        if nl >= 0:
            return (b"".join(parts) if have else more), have + nl
        have += len(more)


def _read_exactly(read: Read, read_size: int, rest: bytes, size: int) -> bytes:
    """Read after ``rest`` until at least ``size`` bytes are held; return them all."""
    parts = [rest]
    have = len(rest)
    while have < size:
        more = read(read_size)
        if not more:
            raise ProtocolError(f"the connection closed inside a chunk ({size - have} bytes "
                                "missing)")
        parts.append(more)
        have += len(more)
    return b"".join(parts)
