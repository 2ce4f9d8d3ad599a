"""decode_object: JSON objects only, DecodeError otherwise, the collector paused for bulk bodies."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import orjson
import pytest

from pyctrl.errors import ApiError
from pyctrl.kube.body import BULK_BYTES, decode_object, gc_paused


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def bulk() -> bytes:
    data = orjson.dumps({"items": [{"n": "x" * 100}] * (BULK_BYTES // 100)})
    assert len(data) >= BULK_BYTES
    return data


def test_objects_decode_and_anything_else_is_a_decode_error() -> None:
    assert decode_object(b'{"a": [1]}') == {"a": [1]}
    for bad in (b"[1, 2]", b'{"a": ', b"\xff"):
        with pytest.raises(ApiError) as err:
            decode_object(bad)
        assert err.value.reason == "DecodeError"


def test_a_bulk_body_is_decoded_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real_loads = orjson.loads

    def loads(data: bytes) -> object:
        seen.append(gc.isenabled())
        return real_loads(data)

    monkeypatch.setattr(orjson, "loads", loads)
    decode_object(b'{"small": true}')
    decode_object(bulk())
    assert seen == [True, False]
    assert gc.isenabled()
    with pytest.raises(ApiError):
        decode_object(b"[" + bulk())  # resumed after an error too
    assert gc.isenabled()


def test_the_pause_leaves_a_collector_that_was_off_off() -> None:
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
    decode_object(bulk())
    assert not gc.isenabled()
    gc.enable()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # nested: the outer pause decides
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
