"""Read your own writes: a cache read after the controller's own write shows that write.

Contract:

* :class:`OwnWrites` remembers, per resource (group and plural) and key (``ns/name``), what
  the controller's last write there left on the server: the ``resourceVersion`` the server
  answered a create, update, patch or status write with, or, for a delete, the object's
  absence (or, when the answer is the object kept by finalizers, its resourceVersion).
  :class:`RecordingClient` wraps a :class:`~pyctrl.kube.Client` and records each successful
  write's answer; a dry run, an error, and an answer that is a ``Status`` of no object record
  nothing. The Manager's ``client_for_leader()`` (so every ``TypedClient`` over it) is one.
* :meth:`OwnWrites.settle` is called by an :class:`~pyctrl.cache.IndexerLister` given
  ``writes`` before its ``get`` and ``list`` (``by_index`` never waits: an index lookup
  spans keys no single write names, and one lost write must not hold every lookup up):
  for every pending write of that
  resource the read covers (the key; for a list, the keys in the lister's namespace, all of
  them for a lister of all namespaces), it waits until the lister's Indexer holds it: an
  object under that key whose resourceVersion is at least the written one (compared as
  integers when both parse, else equal), or a delete of the key seen at such a version
  since (someone deleted it after our write), or for a delete no object (or one of another
  uid).
  Then the entry is forgotten. It wakes on the Indexer's writes (a Condition, no polling).
* Bounded: one read waits at most ``timeout`` seconds of the injected Clock in all (default
  :data:`DEFAULT_TIMEOUT`); past it the read returns what the cache holds, the entry is
  forgotten and ``pyctrl_cache_own_write_timeouts_total{resource}`` counts it. Every read that
  found a pending write observes its wait in ``pyctrl_cache_own_write_wait_seconds{resource}``
  (0 when the cache already held it). A read with nothing pending costs one dict lookup.
* What it cannot see: a write of an object the lister's informer does not hold is skipped
  when the lister knows why (another namespace than its informer's; labels, after the write,
  outside its informer's label selector); one the write itself moves out of the selector
  arrives as the watch's DELETED at the write's resourceVersion, which counts as seen. Writes
  through other clients (another process, ``manager.client``) are not recorded.
* Entries never read again are dropped once older than :data:`FORGET_AFTER` seconds, on
  later writes: by then the watch has delivered them, or the bound would have passed anyway.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Unpack

from prometheus_client import CollectorRegistry, Counter, Histogram

from pyctrl.cache.store import Indexer
from pyctrl.clock import Clock, RealClock
from pyctrl.collectors import per_registry
from pyctrl.kube import meta
from pyctrl.kube.forwarding import ForwardingClient
from pyctrl.kube.interface import Client, PatchBody, RawObject
from pyctrl.kube.resource import Resource
from pyctrl.kube.selectors import LabelSelector
from pyctrl.kube.write_options import DeleteArgs, PatchArgs

__all__ = ["DEFAULT_TIMEOUT", "FORGET_AFTER", "OwnWriteMetrics", "OwnWrites",
           "RecordingClient"]

DEFAULT_TIMEOUT = 3.0
FORGET_AFTER = 60.0
_SWEEP_EVERY = 512  # records between two sweeps for old entries
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

_ResourceKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class _Expected:
    resource_version: str  # the write's; "" for a delete
    gone: bool  # a delete: the key must be empty (or hold another uid)
    uid: str
    at: float  # the clock's monotonic time of the write
    labels: Mapping[str, str]  # the object's labels after the write


@dataclass(frozen=True)
class OwnWriteMetrics:
    """The wait histogram and the timeout counter of one registry."""

    wait: Histogram
    timeouts: Counter


def _new_metrics(registry: CollectorRegistry | None) -> OwnWriteMetrics:
    return OwnWriteMetrics(
        wait=Histogram("pyctrl_cache_own_write_wait_seconds",
                       "Time a cache read waited for the controller's own pending write.",
                       ["resource"], buckets=_BUCKETS, registry=registry),
        timeouts=Counter("pyctrl_cache_own_write_timeouts",
                         "Cache reads that gave up waiting for the controller's own write "
                         "and returned the cached object.", ["resource"], registry=registry))


_metrics = per_registry(_new_metrics)


def _resource_key(resource: Resource) -> _ResourceKey:
    return resource.group, resource.plural


def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def _at_least(have: str, want: str) -> bool:
    """Whether resourceVersion ``have`` is ``want`` or newer (integers when both parse)."""
    if have == want:
        return True
    try:
        return int(have) >= int(want)
    except ValueError:
        return False


def _ready(want: _Expected) -> Callable[[RawObject | None, str], bool]:
    if want.gone:
        return lambda obj, _: obj is None or (bool(want.uid) and meta.uid(obj) != want.uid)
    rv = want.resource_version

    def ready(obj: RawObject | None, deleted: str) -> bool:
        if obj is not None:
            return _at_least(meta.resource_version(obj), rv)
        return bool(deleted) and _at_least(deleted, rv)  # deleted since our write: seen

    return ready


class OwnWrites:
    """The controller's pending writes, and reads that wait for them (module docstring)."""

    def __init__(self, *, clock: Clock | None = None,
                 registry: CollectorRegistry | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        if timeout < 0:
            raise ValueError("timeout must be >= 0")
        self.clock: Clock = clock or RealClock()
        self.timeout = timeout
        self._metrics = _metrics(registry) if registry is not None else _new_metrics(None)
        self._lock = threading.Lock()
        self._pending: dict[_ResourceKey, dict[str, _Expected]] = {}
        self._records = 0
        self._series: dict[str, tuple[Histogram, Counter]] = {}

    # -- writes ---------------------------------------------------------------------------
    def record(self, resource: Resource, answer: RawObject | None, namespace: str | None,
               name: str | None = None, *, deleted: bool = False) -> None:
        """Remember the write ``answer`` is the server's answer to (module docstring)."""
        if answer is not None and answer.get("kind") == "Status":
            details = answer.get("details") or {}
            uid, name = str(details.get("uid") or ""), name or details.get("name")
            answer = None
        else:
            uid = meta.uid(answer) if answer is not None else ""
        md = (answer or {}).get("metadata") or {}
        name = md.get("name") or name
        if not name:
            return
        ns = (md.get("namespace") or namespace or "") if resource.namespaced else ""
        rv = str(md.get("resourceVersion") or "")
        kept = deleted and answer is not None and bool(md.get("finalizers")) and bool(
            md.get("deletionTimestamp"))
        gone = deleted and not kept
        if not gone and not rv:
            return
        now = self.clock.monotonic()
        want = _Expected("" if gone else rv, gone, uid, now, dict(md.get("labels") or {}))
        with self._lock:
            self._pending.setdefault(_resource_key(resource), {})[_key(ns, name)] = want
            self._records += 1
            if self._records % _SWEEP_EVERY == 0:
                self._sweep(now - FORGET_AFTER)

    def _sweep(self, before: float) -> None:
        for rkey, entries in list(self._pending.items()):
            for key in [k for k, w in entries.items() if w.at < before]:
                del entries[key]
            if not entries:
                del self._pending[rkey]

    def pending(self, resource: Resource) -> int:
        """How many writes of ``resource`` no read has seen yet."""
        with self._lock:
            return len(self._pending.get(_resource_key(resource), {}))

    # -- reads ----------------------------------------------------------------------------
    def settle(self, resource: Resource, indexer: Indexer, *, key: str | None = None,
               namespace: str | None = None, scope: str | None = None,
               selector: LabelSelector | None = None) -> None:
        """Wait (bounded) until ``indexer`` holds the pending writes a read covers: the one
        under ``key``, else every one in ``namespace`` (all when None), of those that lie in
        the lister's informer's ``scope`` (its namespace; None: all) and ``selector``."""
        rkey = _resource_key(resource)
        entries = self._pending.get(rkey)
        if not entries:  # the common case: nothing written, or all seen; no lock taken
            return
        with self._lock:
            if key is not None:
                found = [(key, entries[key])] if key in entries else []
            else:
                found = [(k, w) for k, w in entries.items() if _covers(k, namespace, scope)]
        if selector is not None and not selector.empty():
            found = [(k, w) for k, w in found if w.gone or selector.matches(w.labels)]
        if found:
            self._wait(rkey, resource, indexer, found)

    def _wait(self, rkey: _ResourceKey, resource: Resource, indexer: Indexer,
              found: Iterable[tuple[str, _Expected]]) -> None:
        clock = self.clock
        start = clock.monotonic()
        timed_out = False
        for key, want in found:
            left = 0.0 if timed_out else max(0.0, self.timeout - (clock.monotonic() - start))
            if not indexer.wait_for_key(key, _ready(want), clock, left):
                timed_out = True
            with self._lock:  # forget it, unless a newer write replaced it meanwhile
                entries = self._pending.get(rkey)
                if entries is not None and entries.get(key) is want:
                    del entries[key]
                    if not entries:
                        del self._pending[rkey]
        wait, timeouts = self._children(resource.plural)
        wait.observe(clock.monotonic() - start)
        if timed_out:
            timeouts.inc()

    def _children(self, plural: str) -> tuple[Histogram, Counter]:
        """The resource's labelled series (looked up once: ``labels()`` is not free)."""
        found = self._series.get(plural)
        if found is None:
            m = self._metrics
            found = self._series[plural] = (m.wait.labels(resource=plural),
                                            m.timeouts.labels(resource=plural))
        return found


def _covers(key: str, namespace: str | None, scope: str | None) -> bool:
    ns = key.partition("/")[0] if "/" in key else ""
    return (not namespace or ns == namespace) and (not scope or ns == scope)


class RecordingClient(ForwardingClient):
    """A Client whose successful writes are recorded in ``writes`` (module docstring)."""

    def __init__(self, client: Client, writes: OwnWrites) -> None:
        super().__init__(client)
        self.writes = writes

    def create(self, resource: Resource, obj: RawObject, namespace: str | None = None, *,
               dry_run: bool = False) -> RawObject:
        answer = super().create(resource, obj, namespace, dry_run=dry_run)
        if not dry_run:
            self.writes.record(resource, answer, namespace)
        return answer

    def update(self, resource: Resource, obj: RawObject, namespace: str | None = None) -> RawObject:
        answer = super().update(resource, obj, namespace)
        self.writes.record(resource, answer, namespace)
        return answer

    def update_status(self, resource: Resource, obj: RawObject,
                      namespace: str | None = None) -> RawObject:
        answer = super().update_status(resource, obj, namespace)
        self.writes.record(resource, answer, namespace)
        return answer

    def patch(self, resource: Resource, name: str, patch: PatchBody,
              namespace: str | None = None, **kwargs: Unpack[PatchArgs]) -> RawObject:
        answer = super().patch(resource, name, patch, namespace, **kwargs)
        self.writes.record(resource, answer, namespace, name)
        return answer

    def delete(self, resource: Resource, name: str, namespace: str | None = None,
               **kwargs: Unpack[DeleteArgs]) -> RawObject | None:
        answer = super().delete(resource, name, namespace, **kwargs)
        self.writes.record(resource, answer, namespace, name, deleted=True)
        return answer
