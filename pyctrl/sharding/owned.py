"""Owned objects follow their owner's shard: the label at create, the handover list, adoption.

Contract (only when ``ShardingOptions.owned`` names resources, e.g. a CronJob's Jobs):

* **At create** a shard's writes go through :class:`StampingClient`: an object of an ``owned``
  resource whose controller ownerReference is of the sharded kind gets this shard's label
  (``options.shard_label``) - the creating shard is its owner's shard. The name is noted in
  a :class:`CreateRecord` (per owner key ``ns/name``, before the request is sent, so a create
  whose answer was lost is still noted) and dropped when this client deletes it; at most
  ``RECORD_PER_OWNER`` names per owner are kept (older ones are in the cache by then).
  So each shard's informers for ``owned`` list/watch only its own owners' objects.
* **Handing over** (the old shard's acknowledgement, :mod:`pyctrl.sharding.shard`; the
  sharder's move off a dead shard, :mod:`pyctrl.sharding.sharder`) writes, in the same patch
  that changes the owner's labels, the annotation ``options.handover_annotation`` on the
  owner: :func:`encode_handover` of every owned object the owner may have (the old shard's
  cache by controller UID plus its :class:`CreateRecord`, whose names it forgets only once
  that write succeeded; the dead shard's objects found by one LIST of its label), merged
  with a list still on the owner (never lost across two moves).
* **Adopting** (:func:`adopt`, run by the new shard's :class:`ShardReconciler` before the
  owner's first reconcile there): every listed object must be in this shard's cache, or be
  gone from the server (GET: NotFound), or not be controlled by the owner (a same-named
  object of someone else). One found on the server under another shard's label (or none) is
  relabelled for this shard (a merge patch with its resourceVersion); one found under this
  shard's label is only not cached yet. Until all listed objects are accounted for the owner
  is not reconciled (its owned objects' ADDED events bring it back, with a short requeue as
  backstop); then the annotation is removed (precondition: the cached resourceVersion; also
  when the list is empty or unreadable) and the reconcile goes on. So the new shard never
  reconciles an owner while an owned object (an active Job a Forbid policy must see) exists
  that its cache does not hold.
* **Listing from outside any shard** (:func:`add_to_handover`, e.g. a manual run created by
  a command-line helper, which has no shard and so stamps no label): after creating the
  object unlabelled, the caller merges its name into the owner's list, and whichever shard
  owns the owner adopts it as above before the owner's next reconcile. Every writer of the
  list merges the list it read and writes with that read's resourceVersion as precondition,
  so no name is lost between them (see the function's docstring).
* Where an owned object leaves a shard's label-filtered watch (relabelled by its owner's new
  shard) that shard's informer reports a delete. The owner has left that shard by then (its
  drain label is in that shard's cache, or the owner is gone from it), so such a delete is
  neither enqueued nor handed to the controller's delete observer (see the extension's
  ``admit_owner``).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, Protocol, Unpack

import structlog

from pyctrl.errors import ApiError, Conflict, NotFound
from pyctrl.kube import meta
from pyctrl.kube.forwarding import ForwardingClient
from pyctrl.kube.interface import Client, RawObject
from pyctrl.kube.resource import Resource
from pyctrl.kube.write_options import DeleteArgs
from pyctrl.sharding.options import ShardingOptions, handover_annotation_key, shard_label_key

__all__ = ["CreateRecord", "OwnedSource", "StampingClient", "add_to_handover", "adopt",
           "decode_handover", "encode_handover", "owner_key", "resource_key"]

log = structlog.get_logger(__name__)

RECORD_PER_OWNER = 16
HANDOVER_ATTEMPTS = 5  # add_to_handover's writes before it gives up on Conflicts


class OwnedSource(Protocol):
    """A shard's cache of one owned resource (a Lister with the controller-UID index)."""

    def get(self, namespace: str | None, name: str) -> meta.AnyObject: ...

    def by_index(self, index: str, value: str) -> Sequence[meta.AnyObject]: ...


def resource_key(resource: Resource) -> str:
    """``plural`` (core) or ``plural.group``: how a handover list names a resource."""
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


def owner_key(obj: meta.AnyObject, options: ShardingOptions,
              namespace: str | None = None) -> str | None:
    """``ns/name`` (or ``name``) of ``obj``'s controller owner when it is of the sharded kind."""
    ref = meta.controller_ref(obj)
    r = options.resource
    if ref is None or ref.kind != r.kind or meta.api_group(ref.api_version) != r.group:
        return None
    ns = (namespace or meta.namespace(obj)) if r.namespaced else ""
    return f"{ns}/{ref.name}" if ns else ref.name


def encode_handover(entries: Iterable[tuple[str, str]]) -> str:
    """The annotation value for ``(resource key, name)`` pairs (sorted, unique)."""
    grouped: dict[str, set[str]] = {}
    for rkey, name in entries:
        grouped.setdefault(rkey, set()).add(name)
    return json.dumps({k: sorted(v) for k, v in sorted(grouped.items())},
                      separators=(",", ":"))


def decode_handover(value: object) -> set[tuple[str, str]]:
    """The pairs of an annotation value; an unreadable value is an empty list (logged)."""
    if not isinstance(value, str) or not value:
        return set()
    try:
        data = json.loads(value)
    except ValueError:
        log.warning("unreadable handover annotation", value=value[:200])
        return set()
    if not isinstance(data, dict):
        return set()
    return {(str(k), str(n)) for k, names in data.items() if isinstance(names, list)
            for n in names}


def handover_of(obj: meta.AnyObject, options: ShardingOptions) -> set[tuple[str, str]]:
    """The handover list on ``obj`` (empty without the annotation)."""
    return _listed(obj, options.handover_annotation)


def _listed(obj: meta.AnyObject, annotation: str) -> set[tuple[str, str]]:
    return decode_handover(meta.annotations(obj).get(annotation))


def add_to_handover(client: Client, resource: Resource, owner: meta.AnyObject,
                    entries: Iterable[tuple[Resource, str]], *, controller: str,
                    attempts: int = HANDOVER_ATTEMPTS) -> Literal["listed", "unsharded", "gone"]:
    """List owned objects created outside any shard on ``owner``'s handover list, so the
    shard that owns ``owner`` adopts them before it next reconciles it.

    ``owner`` is an object of ``resource`` (the kind sharded as ``controller``) as the caller
    read it; ``entries`` are ``(resource, name)`` of objects in its namespace that it
    controls (ownerReference ``controller: true`` with its uid) and that exist already:
    create them first, without a shard label (should the caller die before this call, the
    sharder's sweep still finds them unlabelled within its resync).

    * ``owner`` with neither the shard label nor a handover list: the controller does not
      shard it; nothing is written, ``"unsharded"``. (An owner read in the moment between its
      old shard's acknowledgement and its assignment looks the same; the sweep covers it.)
    * Otherwise one merge patch of the annotation: the list on the owner merged with
      ``entries``, with the owner's ``resourceVersion`` as precondition; nothing when every
      entry is listed already. On Conflict the owner is read again and the merge written
      again (also when the new read carries no shard label: the first read showed that it is
      sharded, and the Conflict was e.g. its old shard's acknowledgement removing the labels),
      ``attempts`` writes in all (at least one), then the last Conflict is raised.
      ``"listed"`` once written, ``"gone"`` when the owner no longer exists. Other API errors
      are raised.

    Why no name is lost (each other writer of the list merges the list of the version it read
    and writes with that version's ``resourceVersion`` as precondition): the old shard's
    acknowledgement (:mod:`pyctrl.sharding.shard`, ``_acknowledge``: ``handover_of`` of its
    cached owner, plus its cache and record, precondition the cached version), the sharder's
    assignment and sweep (:mod:`pyctrl.sharding.sharder`: ``handover_of`` of the watched owner
    plus its LISTs, precondition the watched version), and the new shard's removal after
    :func:`adopt` (precondition the cached version it adopted from). So each of them either
    read a version that holds our entries, or its write is refused and retried from a newer
    read; and a write of theirs landing first refuses ours, which reads again.
    """
    annotation = handover_annotation_key(controller)
    if not meta.labels(owner).get(shard_label_key(controller)) and \
            not _listed(owner, annotation):
        return "unsharded"
    name, namespace = meta.name(owner), meta.namespace(owner) or None
    wanted = {(resource_key(r), n) for r, n in entries}
    current: meta.AnyObject = owner
    writes = 0
    while True:
        listed = _listed(current, annotation)
        if wanted <= listed:
            return "listed"
        body: RawObject = {"metadata": {
            "resourceVersion": meta.resource_version(current),
            "annotations": {annotation: encode_handover(listed | wanted)}}}
        writes += 1
        try:
            client.patch(resource, name, body, namespace)
            return "listed"
        except NotFound:
            return "gone"
        except Conflict:
            if writes >= attempts:
                raise
        try:
            current = client.get(resource, name, namespace)
        except NotFound:
            return "gone"


class CreateRecord:
    """Owned objects this replica asked to create, per owner key (see module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_owner: dict[str, deque[tuple[str, str]]] = {}
        self._owner_of: dict[tuple[str, str, str], str] = {}  # (rkey, ns, name) -> owner

    @staticmethod
    def _ns(owner: str) -> str:
        return owner.rpartition("/")[0]

    def note(self, owner: str, rkey: str, name: str) -> None:
        with self._lock:
            names = self._by_owner.setdefault(owner, deque())
            if (rkey, name) in names:
                return
            if len(names) >= RECORD_PER_OWNER:
                old_rkey, old_name = names.popleft()
                self._owner_of.pop((old_rkey, self._ns(owner), old_name), None)
            names.append((rkey, name))
            self._owner_of[(rkey, self._ns(owner), name)] = owner

    def drop(self, rkey: str, namespace: str, name: str) -> None:
        """This replica deleted the object: it need not be handed over."""
        with self._lock:
            owner = self._owner_of.pop((rkey, namespace, name), None)
            names = self._by_owner.get(owner) if owner is not None else None
            if names is not None and (rkey, name) in names:
                names.remove((rkey, name))

    def names(self, owner: str) -> list[tuple[str, str]]:
        """The names noted for ``owner``, kept (see :meth:`forget`)."""
        with self._lock:
            return list(self._by_owner.get(owner, ()))

    def take(self, owner: str) -> list[tuple[str, str]]:
        """The names noted for ``owner``, forgotten here (it is being handed over)."""
        with self._lock:
            names = list(self._by_owner.pop(owner, ()))
            for rkey, name in names:
                self._owner_of.pop((rkey, self._ns(owner), name), None)
            return names

    def forget(self, owner: str) -> None:
        """Drop the names noted for ``owner`` (handed over, or the owner left this shard)."""
        self.take(owner)

    def __len__(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._by_owner.values())


class StampingClient(ForwardingClient):
    """A :class:`Client` that labels owned objects with this shard at create (see module
    docstring); every other call goes to ``client`` as it is."""

    def __init__(self, client: Client, options: ShardingOptions, record: CreateRecord) -> None:
        super().__init__(client)
        self.options = options
        self.record = record
        self._owned = {r: resource_key(r) for r in options.owned}

    def create(self, resource: Resource, obj: RawObject, namespace: str | None = None, *,
               dry_run: bool = False) -> RawObject:
        rkey = self._owned.get(resource)
        owner = owner_key(obj, self.options, namespace) if rkey is not None else None
        if owner is None or rkey is None or dry_run:
            return self._client.create(resource, obj, namespace, dry_run=dry_run)
        labels = {**meta.labels(obj), self.options.shard_label: self.options.shard_id}
        md = obj.get("metadata")
        stamped = {**obj, "metadata": {**(md if isinstance(md, Mapping) else {}),
                                       "labels": labels}}
        self.record.note(owner, rkey, meta.name(obj))
        return self._client.create(resource, stamped, namespace)

    def delete(self, resource: Resource, name: str, namespace: str | None = None,
               **kwargs: Unpack[DeleteArgs]) -> RawObject | None:
        result = self._client.delete(resource, name, namespace, **kwargs)
        rkey = self._owned.get(resource)
        if rkey is not None:
            self.record.drop(rkey, namespace or "", name)
        return result


def adopt(owner: meta.AnyObject, options: ShardingOptions, client: Client,
          sources: Mapping[Resource, OwnedSource]) -> bool:
    """Account for every object on ``owner``'s handover list (see module docstring): True
    once all are in this shard's cache or gone (the annotation is then removed), False while
    some are still on their way (relabelled now, or not cached yet)."""
    listed = handover_of(owner, options)
    namespace, uid = meta.namespace(owner) or None, meta.uid(owner)
    by_key = {resource_key(r): r for r in sources}
    pending = 0
    for rkey, name in sorted(listed):
        resource = by_key.get(rkey)
        if resource is None:
            continue  # not a resource this controller owns (any more)
        try:
            sources[resource].get(namespace, name)
            continue
        except NotFound:
            pass
        try:
            live = client.get(resource, name, namespace)
        except NotFound:
            continue
        ref = meta.controller_ref(live)
        if ref is None or ref.uid != uid:
            continue
        pending += 1
        if meta.labels(live).get(options.shard_label) == options.shard_id:
            continue  # ours on the server, not yet in the cache
        body: RawObject = {"metadata": {"resourceVersion": meta.resource_version(live),
                                     "labels": {options.shard_label: options.shard_id}}}
        try:
            client.patch(resource, name, body, namespace)
        except (Conflict, NotFound):
            pass  # changed or gone since the GET: the next try sees it
        except ApiError as err:
            log.warning("adopting an owned object failed", owner=meta.name(owner),
                        object=name, error=str(err))
    if pending:
        return False
    if options.handover_annotation in meta.annotations(owner):
        # Removed even when the list is empty or unreadable ("{}", or a careless hand edit):
        # an annotation left behind would be adopted again at every reconcile, forever.
        client.patch(options.resource, meta.name(owner),
                     {"metadata": {"resourceVersion": meta.resource_version(owner),
                                   "annotations": {options.handover_annotation: None}}},
                     namespace)
    return True
