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
* :func:`decode_head` turns a write's answer into ``{"apiVersion", "kind", "metadata"}``
  (``managedFields`` dropped), skipping the rest of the body undecoded; errors as
  :func:`decode_object`.
* :func:`prepare` and :func:`json_decoder` are the one way pyctrl builds a msgspec decoder
  (typed informers, the typed client, :func:`pyctrl.api.decode`): a type's first use, which
  builds its decoding info, is made under one lock, since two threads making it at once
  crash the interpreter. Their decoders build a type that is not a msgspec type (an
  :class:`pyctrl.api.Unstructured`) through its ``from_json`` classmethod, given the
  decoded JSON value (:func:`dec_hook`; a TypeError or ValueError it raises is a
  ``msgspec.ValidationError`` at that value's path).
* :func:`gc_paused` restores what it found: if the collector was off when the pause began,
  it stays off. The collector is process-wide, so another thread that turns it off *during*
  a pause sees it turned back on when the pause ends (only programs that manage the
  collector themselves, concurrently with LISTs, can notice this).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec
import orjson

from pyctrl.errors import ApiError
from pyctrl.kube.interface import RawObject

__all__ = ["BULK_BYTES", "dec_hook", "decode_head", "decode_object", "gc_paused",
           "json_decoder", "prepare"]

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


def decode_object(data: bytes) -> RawObject:
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


_PREPARE_LOCK = threading.Lock()
_PREPARED: set[object] = set()


def prepare(tp: object) -> None:
    """Build msgspec's decoding info for ``tp`` (and every type it nests) once, under a lock:
    that first use is not thread-safe (msgspec 0.22 crashes when two threads make it at once).
    Cheap after the first call."""
    try:
        if tp in _PREPARED:
            return
    except TypeError:  # an unhashable type form: prepared every time, still under the lock
        with _PREPARE_LOCK:
            msgspec.json.Decoder(tp)
        return
    with _PREPARE_LOCK:
        if tp not in _PREPARED:
            msgspec.json.Decoder(tp)
            _PREPARED.add(tp)


def json_decoder(tp: Any) -> msgspec.json.Decoder[Any]:
    """A new ``msgspec.json.Decoder`` of ``tp`` (any type form: a Struct, ``Page[Job]``),
    built under the lock of :func:`prepare`: every decoder pyctrl builds comes from here."""
    with _PREPARE_LOCK:
        return msgspec.json.Decoder(tp, dec_hook=dec_hook)


def dec_hook(tp: Any, value: object) -> object:
    """msgspec's hook for a type it does not know: ``tp.from_json(value)`` (module
    docstring); TypeError for a type without one."""
    build = getattr(tp, "from_json", None)
    if build is None:
        raise TypeError(f"no decoder for {tp!r}")
    return build(value)


class _Head(msgspec.Struct):
    apiVersion: str = ""  # noqa: N815 (the JSON name)
    kind: str = ""
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


_HEAD = json_decoder(_Head)


def decode_head(data: bytes) -> RawObject:
    """The ``apiVersion``, ``kind`` and ``metadata`` of the JSON object in ``data`` (see the
    module docstring)."""
    try:
        head = _HEAD.decode(data)
    except msgspec.DecodeError as exc:
        raise ApiError(f"undecodable response body: {exc}", reason="DecodeError") from exc
    head.metadata.pop("managedFields", None)
    return {"apiVersion": head.apiVersion, "kind": head.kind, "metadata": head.metadata}
