"""WATCH body de-chunking CPU per event: our chunked parser against urllib3's read_chunked.

Scenario (a busy watch): ``--events`` events of about ``--event-bytes`` bytes, one HTTP chunk
each (the API server flushes one chunk per event), read in this process from an in-memory
socket stand-in under real ``http.client`` and ``urllib3`` responses, as
:meth:`pyctrl.kube.RESTClient.watch` gets them. The stand-in's raw reads return one chunk per
call (one ``recv`` per flushed event, the common case of a watch that keeps up), or with
``--bulk`` as much as asked (a backlog). No server thread: ``time.process_time`` is the
reader's CPU only.

Measured, best of ``--rounds`` (the variants interleaved per round): ``dechunk`` iterates the
chunk data only (``HTTPWatchStream._chunks`` vs ``read_chunked(decode_content=True)``);
``stream`` iterates the decoded events (``HTTPWatchStream``, JSON decoding included), with
urllib3's path forced by disabling ours. Reported in microseconds of CPU per event.

Run: ``.venv/bin/python -m bench watch-chunks [--json]``.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import io
import time
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import orjson
import urllib3

from pyctrl.kube import watch


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--event-bytes", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bulk", action="store_true",
                        help="raw reads return as much as asked, not one chunk per read")


class _Raw(io.RawIOBase):
    def __init__(self, pieces: list[bytes], bulk: bool) -> None:
        self._data = b"".join(pieces) if bulk else b""
        self._pieces = iter(() if bulk else pieces)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        view = memoryview(b)
        if self._data:  # bulk: as much as asked
            piece = self._data[self._pos:self._pos + len(view)]
            self._pos += len(piece)
        else:  # one chunk per read (the requester's buffer always fits one here)
            piece = next(self._pieces, b"")
        view[:len(piece)] = piece
        return len(piece)


class _Sock:
    def __init__(self, pieces: list[bytes], bulk: bool) -> None:
        self._pieces, self._bulk = pieces, bulk

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_Raw(self._pieces, self._bulk))


def _response(pieces: list[bytes], bulk: bool) -> urllib3.HTTPResponse:
    raw = http.client.HTTPResponse(_Sock(pieces, bulk), method="GET")  # type: ignore[arg-type]
    raw.begin()
    return urllib3.HTTPResponse(body=raw, headers=dict(raw.getheaders()), status=raw.status,
                                preload_content=False, original_response=raw,
                                decode_content=True)


def _wire(events: int, size: int) -> list[bytes]:
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    pieces = [head]
    for i in range(events):
        obj: dict[str, Any] = {"type": "MODIFIED", "object": {
            "apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
            "metadata": {"name": f"cj-{i}", "namespace": "default", "resourceVersion": str(i)},
            "spec": {"schedule": "*/1 * * * *"}, "status": {}}}
        line = orjson.dumps(obj)
        obj["object"]["spec"]["pad"] = "x" * max(0, size - len(line) - 11)
        line = orjson.dumps(obj) + b"\n"
        pieces.append(b"%x\r\n%s\r\n" % (len(line), line))
    pieces.append(b"0\r\n\r\n")
    return pieces


def _cpu(fn: Callable[[], int], expect: int) -> float:
    gc.collect()
    start = time.process_time()
    got = fn()
    cpu = time.process_time() - start
    if got != expect:
        raise AssertionError(f"{got} items, {expect} expected")
    return cpu


def _count(it: Iterator[Any]) -> int:
    n = 0
    for _ in it:
        n += 1
    return n


def run(args: argparse.Namespace) -> dict[str, Any]:
    pieces = _wire(args.events, args.event_bytes)
    wire_bytes = sum(len(p) for p in pieces[1:-1]) / args.events

    def new_chunks() -> int:
        return _count(watch.HTTPWatchStream(_response(pieces, args.bulk))._chunks())

    def old_chunks() -> int:
        return _count(_response(pieces, args.bulk).read_chunked(decode_content=True))

    def new_stream() -> int:
        return _count(iter(watch.HTTPWatchStream(_response(pieces, args.bulk))))

    def old_stream() -> int:
        with mock.patch.object(watch, "_dechunkable", return_value=None):
            return _count(iter(watch.HTTPWatchStream(_response(pieces, args.bulk))))

    variants = {"dechunk_new": new_chunks, "dechunk_urllib3": old_chunks,
                "stream_new": new_stream, "stream_urllib3": old_stream}
    best = dict.fromkeys(variants, float("inf"))
    for _ in range(args.rounds):
        for name, fn in variants.items():
            best[name] = min(best[name], _cpu(fn, args.events))
    us = {name: round(cpu / args.events * 1e6, 3) for name, cpu in best.items()}
    return {
        "events": args.events, "wire_bytes_per_event": round(wire_bytes),
        "reads": "bulk" if args.bulk else "one chunk per read",
        "cpu_us_per_event": us,
        "dechunk_ratio": round(us["dechunk_new"] / us["dechunk_urllib3"], 3),
        "stream_ratio": round(us["stream_new"] / us["stream_urllib3"], 3),
    }
