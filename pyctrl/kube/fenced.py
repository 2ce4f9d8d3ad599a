"""FencedClient: a leader-scoped :class:`Client` that refuses writes once the lease is in doubt.

Contract:

* Wraps any :class:`Client` and a :class:`LeaseHolder` (a
  :class:`pyctrl.leaderelection.LeaderElector` is one). Reads (``get``, ``list``, ``watch``)
  are passed through unchanged, leader or not.
* Every mutating call (``create``, ``update``, ``update_status``, ``patch``, ``delete``) first
  asks ``holder.holds_lease()``, immediately before handing the request to the wrapped client,
  and raises :class:`pyctrl.errors.NotLeader` without calling it when the answer is no. The
  elector answers from the local monotonic clock (renew deadline since the send time of its
  last successful renew), so a replica frozen past its deadline refuses every write on
  resume, even before its elector thread has run again. A refused write is never sent, so
  it never reaches the API server (nor its audit log).
* ``NotLeader`` is a :class:`pyctrl.errors.TerminalError`: a reconcile stops at its next
  write and its key is not retried hot; the event sink drops refused events.
* The check runs twice: before the wrapped client is called, and again inside
  :class:`pyctrl.kube.RESTClient` after its client-side rate limiter admitted the request,
  immediately before the send (through :func:`pyctrl.kube.guard.guarded`). What is left is
  the socket write itself: a process frozen between that last check and the write sends that
  one request on resume.
* Refused writes are counted in ``pyctrl_leader_fenced_writes_total{verb}`` when a registry
  is given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar, Unpack

from prometheus_client import CollectorRegistry, Counter

from pyctrl.collectors import per_registry
from pyctrl.errors import NotLeader
from pyctrl.kube import meta
from pyctrl.kube.forwarding import ForwardingClient
from pyctrl.kube.guard import guarded
from pyctrl.kube.interface import Client, PatchBody, RawObject
from pyctrl.kube.resource import Resource
from pyctrl.kube.write_options import DeleteArgs, PatchArgs

__all__ = ["FencedClient", "LeaseHolder"]

_T = TypeVar("_T")


class LeaseHolder(Protocol):
    """What a :class:`FencedClient` asks before each write."""

    def holds_lease(self) -> bool:
        """True while this replica may write as the leader."""
        ...

    def describe(self) -> str:
        """The lease, for error messages (e.g. ``Lease ns/name``)."""
        ...


def _new_fenced_counter(registry: CollectorRegistry | None) -> Counter:
    return Counter(
        "pyctrl_leader_fenced_writes",
        "Writes refused locally because the leader lease could not be trusted.",
        ["verb"], registry=registry,
    )


_fenced_counter = per_registry(_new_fenced_counter)


class FencedClient(ForwardingClient):
    """A :class:`Client` whose writes need a valid leader lease (see module docstring)."""

    def __init__(self, client: Client, holder: LeaseHolder, *,
                 registry: CollectorRegistry | None = None) -> None:
        super().__init__(client)
        self._holder = holder
        self._refused = None if registry is None else _fenced_counter(registry)

    def _fence(self, verb: str, resource: Resource, name: str | None,
               namespace: str | None) -> None:
        if self._holder.holds_lease():
            return
        if self._refused is not None:
            self._refused.labels(verb=verb).inc()
        where = f"{namespace}/{name}" if namespace else (name or "")
        raise NotLeader(
            f"refusing {verb} {resource.plural} {where}: this replica no longer holds the "
            f"leader lease {self._holder.describe()} (not renewed within the renew deadline, "
            "lost or released)"
        )

    # -- writes ---------------------------------------------------------------------------
    def _write(self, verb: str, resource: Resource, name: str | None, namespace: str | None,
               send: Callable[[], _T]) -> _T:
        """``send()`` once the lease is checked, re-checked by the RESTClient before it sends."""
        def fence() -> None:
            self._fence(verb, resource, name, namespace)

        fence()
        with guarded(fence):
            return send()

    def create(self, resource: Resource, obj: RawObject, namespace: str | None = None, *,
               dry_run: bool = False) -> RawObject:
        if dry_run:  # stores nothing: no lease needed to ask
            return self._client.create(resource, obj, namespace, dry_run=True)
        return self._write("create", resource, _name(obj), namespace or _namespace(obj),
                           lambda: self._client.create(resource, obj, namespace))

    def update(self, resource: Resource, obj: RawObject, namespace: str | None = None) -> RawObject:
        return self._write("update", resource, _name(obj), namespace or _namespace(obj),
                           lambda: self._client.update(resource, obj, namespace))

    def update_status(
        self, resource: Resource, obj: RawObject, namespace: str | None = None
    ) -> RawObject:
        return self._write("update_status", resource, _name(obj), namespace or _namespace(obj),
                           lambda: self._client.update_status(resource, obj, namespace))

    def patch(self, resource: Resource, name: str, patch: PatchBody,
              namespace: str | None = None, **kwargs: Unpack[PatchArgs]) -> RawObject:
        return self._write("patch", resource, name, namespace, lambda: self._client.patch(
            resource, name, patch, namespace, **kwargs))

    def delete(self, resource: Resource, name: str, namespace: str | None = None,
               **kwargs: Unpack[DeleteArgs]) -> RawObject | None:
        return self._write("delete", resource, name, namespace, lambda: self._client.delete(
            resource, name, namespace, **kwargs))


def _name(obj: RawObject) -> str | None:  # for the log line of a refused write
    return meta.name(obj) or meta.generate_name(obj) or None


def _namespace(obj: RawObject) -> str | None:
    return meta.namespace(obj) or None
