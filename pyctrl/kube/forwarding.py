"""ForwardingClient: a :class:`Client` that hands every call to the client it wraps.

Contract: ``ForwardingClient(client)`` answers each :class:`Client` method by calling the
same method of ``client`` with the same arguments; :attr:`inner` is ``client``. It exists to
be subclassed by wrappers that change a few calls (the leader fence changes the writes, the
sharding stamp changes ``create``) and keep the rest as they are. ``get_raw`` (the
:class:`~pyctrl.kube.RawGetter` read a typed client decodes straight into its class) is the
wrapped client's when it has one, else its ``get`` encoded.
"""

from __future__ import annotations

from typing import Unpack

import orjson

from pyctrl.kube.interface import Client, PatchBody, RawGetter, RawObject, WatchStream
from pyctrl.kube.options import ListArgs, ListOptions, WatchArgs
from pyctrl.kube.resource import Resource
from pyctrl.kube.write_options import DeleteArgs, PatchArgs

__all__ = ["ForwardingClient"]


class ForwardingClient:
    """Forwards every call to ``client`` (see module docstring)."""

    def __init__(self, client: Client) -> None:
        self._client = client

    @property
    def inner(self) -> Client:
        """The wrapped client."""
        return self._client

    # -- reads ----------------------------------------------------------------------------
    def get(self, resource: Resource, name: str, namespace: str | None = None) -> RawObject:
        return self._client.get(resource, name, namespace)

    def get_raw(self, resource: Resource, name: str, namespace: str | None = None) -> bytes:
        if isinstance(self._client, RawGetter):
            return self._client.get_raw(resource, name, namespace)
        return orjson.dumps(self._client.get(resource, name, namespace))

    def list(self, resource: Resource, namespace: str | None = None, *,
             options: ListOptions | None = None, **kwargs: Unpack[ListArgs]) -> RawObject:
        return self._client.list(resource, namespace, options=options, **kwargs)

    def watch(self, resource: Resource, namespace: str | None = None, *,
              options: ListOptions | None = None, **kwargs: Unpack[WatchArgs]) -> WatchStream:
        return self._client.watch(resource, namespace, options=options, **kwargs)

    # -- writes ---------------------------------------------------------------------------
    def create(self, resource: Resource, obj: RawObject, namespace: str | None = None, *,
               dry_run: bool = False) -> RawObject:
        return self._client.create(resource, obj, namespace, dry_run=dry_run)

    def update(self, resource: Resource, obj: RawObject, namespace: str | None = None) -> RawObject:
        return self._client.update(resource, obj, namespace)

    def update_status(
        self, resource: Resource, obj: RawObject, namespace: str | None = None
    ) -> RawObject:
        return self._client.update_status(resource, obj, namespace)

    def patch(self, resource: Resource, name: str, patch: PatchBody,
              namespace: str | None = None, **kwargs: Unpack[PatchArgs]) -> RawObject:
        return self._client.patch(resource, name, patch, namespace, **kwargs)

    def delete(self, resource: Resource, name: str, namespace: str | None = None,
               **kwargs: Unpack[DeleteArgs]) -> RawObject | None:
        return self._client.delete(resource, name, namespace, **kwargs)
