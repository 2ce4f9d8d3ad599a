"""Decoding a WATCH response: newline-delimited JSON events over a streaming HTTP body.

Contract:

* :class:`WatchDecoder` turns arbitrary byte chunks into events. The API server writes one
  JSON object per event followed by ``\\n``; a chunk may hold several events, part of one, or
  split a multi-byte character, so bytes are buffered until a newline and each complete line
  is decoded with orjson. Blank lines are skipped; a line that is not a JSON object raises
  :class:`pyctrl.errors.ApiError` (the stream is corrupt, the caller must re-watch).
  ``WatchDecoder(decode)`` decodes each line with ``decode`` instead (a typed informer's
  decoder: straight from the line's bytes into its kind, see :mod:`pyctrl.cache.typed`);
  :meth:`HTTPWatchStream.decode_with` sets it on a stream before it is iterated.
* :class:`HTTPWatchStream` is the :class:`pyctrl.kube.interface.WatchStream` the REST client
  returns. Iterating yields events until the server ends the response (``timeoutSeconds``) or
  the connection drops (both end iteration quietly: the Reflector re-watches). ERROR events are
  yielded like any other (their object is a Status). ``close()`` may be called from any thread:
  it shuts the socket down so a reader blocked in ``recv`` wakes at once, and the iterator then
  stops without raising. The connection is never returned to the pool after a close.
* A chunked, identity-coded body is de-chunked here (:func:`pyctrl.kube.chunked.iter_chunks`
  over ``read1`` of the buffered socket reader under urllib3's and http.client's responses,
  the reader urllib3's own ``read_chunked`` uses, so bytes it already buffered come first):
  each event is delivered as soon as its chunk arrived. A content-coded (gzip) body, or
  response internals not as expected, go through urllib3's ``read_chunked``. Malformed
  framing ends the stream like a dropped connection. The connection goes back to the pool
  only when the body ended exactly (last chunk and trailers read, nothing beyond) and the
  stream was not closed; otherwise it is closed.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import structlog
import urllib3
from urllib3.exceptions import HTTPError

from pyctrl.errors import ApiError
from pyctrl.kube.chunked import iter_chunks
from pyctrl.kube.interface import WatchEvent

__all__ = ["HTTPWatchStream", "WatchDecoder"]

log = structlog.get_logger(__name__)

_READ_SIZE = 64 * 1024


class WatchDecoder:
    """Split a byte stream into newline-terminated JSON events (see module docstring)."""

    __slots__ = ("_buf", "_decode")

    def __init__(self, decode: Callable[[bytes], WatchEvent] | None = None) -> None:
        self._buf = b""
        self._decode = decode or _decode

    def feed(self, chunk: bytes) -> list[WatchEvent]:
        """Add ``chunk``; return every event completed by it, in order."""
        if not chunk:
            return []
        data = self._buf + chunk if self._buf else chunk
        end = data.rfind(b"\n")
        if end < 0:
            self._buf = data
            return []
        self._buf = data[end + 1 :]
        decode = self._decode
        out: list[WatchEvent] = []
        for line in data[:end].split(b"\n"):
            if line.strip():
                out.append(decode(line))
        return out

    def finish(self) -> list[WatchEvent]:
        """The stream ended: decode a final event that had no trailing newline, if any."""
        rest, self._buf = self._buf, b""
        return [self._decode(rest)] if rest.strip() else []

    @property
    def pending(self) -> int:
        """Bytes buffered waiting for a newline."""
        return len(self._buf)


def _dechunkable(resp: urllib3.HTTPResponse) -> http.client.HTTPResponse | None:
    """The untouched http.client response under ``resp`` if its body may be de-chunked here:
    identity content coding, no chunk read yet by urllib3 or http.client, a buffered reader."""
    coding = resp.headers.get("content-encoding", "").strip().lower()
    if coding not in ("", "identity") or resp.chunk_left is not None:
        return None
    raw = getattr(resp, "_fp", None)
    if (not isinstance(raw, http.client.HTTPResponse) or raw.chunk_left is not None
            or not callable(getattr(raw.fp, "read1", None))):
        return None
    return raw


def _decode(line: bytes) -> WatchEvent:
    try:
        event: Any = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ApiError(f"undecodable watch event: {exc}", reason="WatchDecodeError") from exc
    if not isinstance(event, dict) or "type" not in event:
        raise ApiError("watch event is not an object with a type", reason="WatchDecodeError")
    return event


class HTTPWatchStream:
    """An open WATCH response (see module docstring)."""

    def __init__(self, response: urllib3.BaseHTTPResponse,
                 on_end: Callable[[], None] | None = None) -> None:
        self._response = response
        self._on_end = on_end
        self._lock = threading.Lock()
        self._closed = False
        self._finished = False
        self._iterating = False
        # Set when iter_chunks read the body exactly: the http.client response to close
        # before the connection may go back to the pool.
        self._reusable: http.client.HTTPResponse | None = None
        self._line_decoder: Callable[[bytes], WatchEvent] | None = None

    def decode_with(self, decode: Callable[[bytes], WatchEvent]) -> None:
        """Decode each event's line with ``decode`` (before the stream is iterated)."""
        self._line_decoder = decode

    @property
    def closed(self) -> bool:
        return self._closed

    def _chunks(self) -> Iterator[bytes]:
        resp = self._response
        if resp.headers.get("transfer-encoding", "").lower() == "chunked" and isinstance(
            resp, urllib3.HTTPResponse
        ):
            # The server flushes one chunk per event: each is yielded as soon as it arrived.
            raw = _dechunkable(resp)
            if raw is None:
                yield from resp.read_chunked(decode_content=True)
                return
            assert raw.fp is not None  # checked by _dechunkable
            if (yield from iter_chunks(raw.fp.read1, _READ_SIZE)):
                self._reusable = raw
            return
        while True:
            data = resp.read1(_READ_SIZE)
            if not data:
                return
            yield data

    def __iter__(self) -> Iterator[WatchEvent]:
        with self._lock:
            self._iterating = True
        decoder = WatchDecoder(self._line_decoder)
        try:
            if self._closed:
                return
            for chunk in self._chunks():
                if self._closed:
                    return
                yield from decoder.feed(chunk)
            if not self._closed:
                yield from decoder.finish()
        except (HTTPError, OSError, ValueError, AttributeError) as exc:
            # A dropped connection, or our own close() pulling the socket away (urllib3 may
            # then fail on the None socket); either way the watch is over.
            if not self._closed:
                log.debug("watch stream ended by error", error=str(exc))
        finally:
            self._finish()

    def _finish(self) -> None:
        with self._lock:
            if self._finished:
                return
            self._finished = True
            # A close() that came first may have shut the socket down: never reuse it then.
            reusable = None if self._closed else self._reusable
        try:
            if reusable is not None:
                reusable.close()  # http.client lets the connection send again once closed
                self._response.release_conn()
            self._response.close()  # closes the connection unless released above
        finally:
            self._response.release_conn()
            if self._on_end is not None:
                self._on_end()

    def close(self) -> None:
        """End the watch from any thread; the iterator stops promptly without raising."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            finished, iterating = self._finished, self._iterating
        if finished:
            return
        try:
            self._response.shutdown()
        except (OSError, AttributeError, RuntimeError) as exc:
            # RuntimeError: urllib3's read_chunked released the connection at the body's end.
            log.debug("watch shutdown failed", error=str(exc))
        if not iterating:
            self._finish()

    def __enter__(self) -> HTTPWatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self._finish()
