"""Decoding a WATCH response: newline-delimited JSON events over a streaming HTTP body.

Contract:

* :class:`WatchDecoder` turns arbitrary byte chunks into events. The API server writes one
  JSON object per event followed by ``\\n``; a chunk may hold several events, part of one, or
  split a multi-byte character, so bytes are buffered until a newline and each complete line
  is decoded with orjson. Blank lines are skipped; a line that is not a JSON object raises
  :class:`pyctrl.errors.ApiError` (the stream is corrupt, the caller must re-watch).
* :class:`HTTPWatchStream` is the :class:`pyctrl.kube.interface.WatchStream` the REST client
  returns. Iterating yields events until the server ends the response (``timeoutSeconds``) or
  the connection drops (both end iteration quietly: the Reflector re-watches). ERROR events are
  yielded like any other (their object is a Status). ``close()`` may be called from any thread:
  it shuts the socket down so a reader blocked in ``recv`` wakes at once, and the iterator then
  stops without raising. The connection is never returned to the pool after a close.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import structlog
import urllib3
from urllib3.exceptions import HTTPError

from pyctrl.errors import ApiError
from pyctrl.kube.interface import WatchEvent

__all__ = ["HTTPWatchStream", "WatchDecoder"]

log = structlog.get_logger(__name__)

_READ_SIZE = 64 * 1024


class WatchDecoder:
    """Split a byte stream into newline-terminated JSON events (see module docstring)."""

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = b""

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
        out: list[WatchEvent] = []
        for line in data[:end].split(b"\n"):
            if line.strip():
                out.append(_decode(line))
        return out

    def finish(self) -> list[WatchEvent]:
        """The stream ended: decode a final event that had no trailing newline, if any."""
        rest, self._buf = self._buf, b""
        return [_decode(rest)] if rest.strip() else []

    @property
    def pending(self) -> int:
        """Bytes buffered waiting for a newline."""
        return len(self._buf)


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

    @property
    def closed(self) -> bool:
        return self._closed

    def _chunks(self) -> Iterator[bytes]:
        resp = self._response
        if resp.headers.get("transfer-encoding", "").lower() == "chunked" and isinstance(
            resp, urllib3.HTTPResponse
        ):
            # Yields each HTTP chunk as soon as it arrives; the server flushes per event.
            yield from resp.read_chunked(decode_content=True)
            return
        while True:
            data = resp.read1(_READ_SIZE)
            if not data:
                return
            yield data

    def __iter__(self) -> Iterator[WatchEvent]:
        with self._lock:
            self._iterating = True
        decoder = WatchDecoder()
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
        try:
            self._response.close()
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
        except (OSError, AttributeError) as exc:
            log.debug("watch shutdown failed", error=str(exc))
        if not iterating:
            self._finish()

    def __enter__(self) -> HTTPWatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self._finish()
