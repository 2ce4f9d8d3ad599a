"""Decoding JSON response bodies into objects, with the cyclic GC paused for bulk bodies.

Contract:

* :func:`decode_object` turns a response body into a JSON object (``dict``) with orjson.
  Undecodable bytes, and a body that is valid JSON but not an object, raise
  :class:`pyctrl.errors.ApiError` with ``reason="DecodeError"``.
* While a body of :data:`BULK_BYTES` or more (a LIST page) is decoded, Python's cyclic
  garbage collector is paused (:func:`gc_paused`; the Reflector also holds it while it
  transforms a listed page and fills its store: CPU-bound steps, never a network wait).
  Freshly decoded JSON holds no reference cycles; reference counting still frees everything
  as usual.
* :func:`gc_paused` restores what it found: if the collector was off when the pause began,
  it stays off. The collector is process-wide, so another thread that turns it off *during*
  a pause sees it turned back on when the pause ends (only programs that manage the
  collector themselves, concurrently with LISTs, can notice this).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from pyctrl.errors import ApiError
from pyctrl.kube.interface import Object

__all__ = ["BULK_BYTES", "decode_object", "gc_paused"]

# Bodies at least this long are decoded with the collector paused; smaller ones (single
# objects, Status errors) are too quick for a collection to matter.
BULK_BYTES = 64 * 1024


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a bulk of allocations (see module docstring).

    Only for short, CPU-bound steps that allocate many long-lived objects and no cycles.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def decode_object(data: bytes) -> Object:
    """The JSON object in ``data`` (see the module docstring)."""
    try:
        if len(data) >= BULK_BYTES:
            with gc_paused():
                body: Any = orjson.loads(data)
        else:
            body = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ApiError(f"undecodable response body: {exc}", reason="DecodeError") from exc
    if not isinstance(body, dict):
        raise ApiError("response body is not a JSON object", reason="DecodeError")
    return body
