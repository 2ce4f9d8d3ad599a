"""DeltaFIFO semantics (client-go's): coalescing, dedup, replace tombstones, sync, close."""

from __future__ import annotations

import threading

import pytest

from pyctrl.cache.delta_fifo import (
    ADDED,
    DELETED,
    REPLACED,
    SYNC,
    UPDATED,
    Delta,
    DeltaFIFO,
    FIFOClosedError,
)
from pyctrl.cache.keys import DeletedFinalStateUnknown
from pyctrl.cache.store import Indexer
from tests.unit.cache.helpers import cm


def pop_all(fifo: DeltaFIFO) -> list[tuple[list[Delta], bool]]:
    out: list[tuple[list[Delta], bool]] = []
    while len(fifo):
        fifo.pop(lambda d, initial: out.append((d, initial)))
    return out


def types(deltas: list[Delta]) -> list[str]:
    return [d.type for d in deltas]


def test_deltas_for_one_key_coalesce_in_order_and_queue_order_is_fifo() -> None:
    fifo = DeltaFIFO()
    fifo.add(cm("a", "1"))
    fifo.add(cm("b", "1"))
    fifo.update(cm("a", "2"))
    fifo.delete(cm("a", "2"))
    assert fifo.list_keys() == ["default/a", "default/b"]
    popped = pop_all(fifo)
    assert [types(d) for d, _ in popped] == [[ADDED, UPDATED, DELETED], [ADDED]]
    assert popped[0][0][1].object["metadata"]["resourceVersion"] == "2"  # type: ignore[index]


def test_consecutive_deletes_collapse_preferring_real_deletion_over_tombstone() -> None:
    fifo = DeltaFIFO()
    fifo.add(cm("a"))
    fifo.delete(cm("a"))
    fifo.delete(DeletedFinalStateUnknown("default/a", cm("a")))
    deltas = fifo.get_by_key("default/a")
    assert deltas is not None
    assert types(deltas) == [ADDED, DELETED]
    assert not isinstance(deltas[-1].object, DeletedFinalStateUnknown)

    fifo2 = DeltaFIFO()
    fifo2.add(cm("b"))
    fifo2.delete(DeletedFinalStateUnknown("default/b", None))
    fifo2.delete(cm("b", "9"))
    deltas2 = fifo2.get_by_key("default/b")
    assert deltas2 is not None and types(deltas2) == [ADDED, DELETED]
    assert deltas2[-1].object["metadata"]["resourceVersion"] == "9"  # type: ignore[index]


def test_delete_of_unknown_object_is_ignored() -> None:
    fifo = DeltaFIFO(known_objects=Indexer())
    fifo.delete(cm("never-seen"))
    assert len(fifo) == 0


def test_replace_emits_tombstones_for_known_keys_missing_from_relist() -> None:
    known = Indexer()
    known.add(cm("kept", "1"))
    known.add(cm("vanished", "1"))
    fifo = DeltaFIFO(known_objects=known)
    fifo.add(cm("queued-only", "3"))
    fifo.replace([cm("kept", "2")], "10")
    by_key = {k: fifo.get_by_key(k) for k in fifo.list_keys()}
    assert types(by_key["default/kept"] or []) == [REPLACED]
    vanished = by_key["default/vanished"] or []
    assert types(vanished) == [DELETED]
    tomb = vanished[0].object
    assert isinstance(tomb, DeletedFinalStateUnknown)
    assert tomb.key == "default/vanished" and tomb.obj is known.get_by_key("default/vanished")
    queued = by_key["default/queued-only"] or []
    assert types(queued) == [ADDED, DELETED]
    assert isinstance(queued[-1].object, DeletedFinalStateUnknown)
    assert queued[-1].object.obj["metadata"]["resourceVersion"] == "3"


def test_has_synced_after_initial_replace_batch_is_popped() -> None:
    fifo = DeltaFIFO(known_objects=Indexer())
    assert not fifo.has_synced()
    fifo.replace([cm("a"), cm("b")], "5")
    assert not fifo.has_synced()
    fifo.add(cm("c"))  # arrives after the list: not part of the initial batch
    initial: list[bool] = []
    fifo.pop(lambda d, i: initial.append(i))
    assert not fifo.has_synced()
    fifo.pop(lambda d, i: initial.append(i))
    assert fifo.has_synced()
    fifo.pop(lambda d, i: initial.append(i))
    assert initial == [True, True, False]


def test_empty_initial_replace_is_synced_immediately() -> None:
    fifo = DeltaFIFO()
    fifo.replace([], "1")
    assert fifo.has_synced()


def test_resync_queues_sync_only_for_known_objects_without_pending_deltas() -> None:
    known = Indexer()
    known.add(cm("a"))
    known.add(cm("b"))
    fifo = DeltaFIFO(known_objects=known)
    fifo.update(cm("b", "2"))
    fifo.resync()
    assert types(fifo.get_by_key("default/a") or []) == [SYNC]
    assert types(fifo.get_by_key("default/b") or []) == [UPDATED]
    sync_obj = (fifo.get_by_key("default/a") or [])[0].object
    assert sync_obj is known.get_by_key("default/a")


def test_transform_applies_to_queued_objects_but_not_tombstones() -> None:
    seen: list[str] = []

    def transform(obj: dict[str, object]) -> dict[str, object]:
        seen.append(obj["metadata"]["name"])  # type: ignore[index]
        return {**obj, "transformed": True}

    fifo = DeltaFIFO(transformer=transform)
    fifo.replace([cm("a")], "1")
    fifo.add(cm("b"))
    fifo.delete(DeletedFinalStateUnknown("default/b", None))
    assert seen == ["a", "b"]
    assert (fifo.get_by_key("default/a") or [])[0].object["transformed"] is True  # type: ignore[index]


def test_pop_blocks_until_item_and_close_wakes_it() -> None:
    fifo = DeltaFIFO()
    got: list[object] = []
    errors: list[BaseException] = []

    def consumer() -> None:
        try:
            while True:
                fifo.pop(lambda d, i: got.append(d[0].object))
        except FIFOClosedError as err:
            errors.append(err)

    t = threading.Thread(target=consumer)
    t.start()
    fifo.add(cm("a"))
    fifo.close()
    t.join(5)
    assert not t.is_alive()
    assert len(errors) == 1
    with pytest.raises(FIFOClosedError):
        fifo.pop(lambda d, i: None)


def test_pop_batch_preserves_order_and_initial_flags() -> None:
    fifo = DeltaFIFO()
    fifo.replace([cm(f"o{i}") for i in range(5)], "1")
    fifo.add(cm("late"))
    out: list[tuple[str, bool]] = []
    n = fifo.pop_batch(lambda d, i: out.append((d[0].object["metadata"]["name"], i)),  # type: ignore[index]
                       max_items=100)
    assert n == 6
    assert out == [(f"o{i}", True) for i in range(5)] + [("late", False)]
    assert fifo.has_synced()


def store_popped(fifo: DeltaFIFO, cache: Indexer, n: int) -> list[tuple[str, str, bool]]:
    """Pop ``n`` keys into ``cache`` as the informer does; (name, delta type, initial)."""
    out: list[tuple[str, str, bool]] = []

    def process(deltas: list[Delta], initial: bool) -> None:
        for d in deltas:
            if isinstance(d.object, DeletedFinalStateUnknown):
                cache.delete(d.object)
                out.append((d.object.key.split("/")[-1], d.type, initial))
            else:
                cache.update(d.object)
                out.append((d.object["metadata"]["name"], d.type, initial))

    for _ in range(n):
        fifo.pop(process)
    return out


def test_streamed_pages_are_popped_before_the_list_ends_and_replace_skips_them() -> None:
    cache = Indexer()
    synced: list[bool] = []
    fifo = DeltaFIFO(known_objects=cache, on_synced=lambda: synced.append(True))
    page1, page2 = [cm("a"), cm("b")], [cm("c")]
    assert fifo.stream_initial(page1)
    assert store_popped(fifo, cache, 2) == [("a", REPLACED, True), ("b", REPLACED, True)]
    assert fifo.stream_initial(page2)  # the cache holds keys now: later pages still stream
    assert not fifo.has_synced() and not synced
    fifo.replace([*page1, *page2, cm("d")], "7")  # the streamed objects are not queued again
    assert fifo.list_keys() == ["default/c", "default/d"]
    assert not fifo.has_synced()
    assert store_popped(fifo, cache, 2) == [("c", REPLACED, True), ("d", REPLACED, True)]
    assert fifo.has_synced() and synced == [True]
    assert not fifo.stream_initial([cm("d")])  # only the first list streams
    assert len(fifo) == 0


def test_streamed_pages_fully_popped_sync_at_replace() -> None:
    synced: list[bool] = []
    cache = Indexer()
    fifo = DeltaFIFO(known_objects=cache, on_synced=lambda: synced.append(True))
    page = [cm("a")]
    assert fifo.stream_initial(page)
    store_popped(fifo, cache, 1)
    fifo.replace(page, "7")
    assert fifo.has_synced() and synced == [True]


def test_a_list_that_failed_after_streaming_is_mended_by_the_next_replace() -> None:
    cache = Indexer()
    fifo = DeltaFIFO(known_objects=cache)
    assert fifo.stream_initial([cm("a"), cm("b"), cm("gone-popped")])
    store_popped(fifo, cache, 3)
    assert fifo.stream_initial([cm("gone-queued")])
    # The list failed here; the retry lists anew (new objects), a, b and c.
    fifo.replace([cm("a", "2"), cm("b"), cm("c")], "9")
    popped = store_popped(fifo, cache, len(fifo))
    assert popped == [("gone-queued", REPLACED, True), ("gone-queued", DELETED, True),
                      ("a", REPLACED, True), ("b", REPLACED, True), ("c", REPLACED, True),
                      ("gone-popped", DELETED, True)]
    assert fifo.has_synced()
    assert sorted(cache.list_keys()) == ["default/a", "default/b", "default/c"]


def test_stream_initial_declines_unless_first_and_empty() -> None:
    fifo = DeltaFIFO()
    fifo.add(cm("a"))
    assert not fifo.stream_initial([cm("b")])
    cache = Indexer()
    cache.add(cm("x"))
    assert not DeltaFIFO(known_objects=cache).stream_initial([cm("b")])
    replaced = DeltaFIFO()
    replaced.replace([], "1")
    assert not replaced.stream_initial([cm("b")])
    assert len(replaced) == 0
