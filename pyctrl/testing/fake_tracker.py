"""The FakeClient's object tracker: what the API server stores, and how writes change it.

Contract (what the API server does, and so does this; the FakeClient docstring has the list):
one cluster-global resourceVersion counter advanced by every write; create fills uid,
creationTimestamp (from the Clock), generation, namespace, apiVersion/kind and honours
generateName; update/patch keep the server-owned metadata, bump generation on spec changes,
honour resourceVersion preconditions (Conflict) and the status subresource; a patch that sets
another ``metadata.uid`` is Invalid (the uid is immutable) and an apply carrying a uid of an
object that does not exist is a Conflict (the server's "uid mismatch"); a write that
changes nothing is skipped; delete honours preconditions and finalizers; list filters, sorts
and pages with continue tokens that expire with the watch history. Every write is handed to
the :class:`~pyctrl.testing.fake_watch.WatchFanOut` under the same lock, at its
resourceVersion. Objects stored and returned are deep copies.
"""

from __future__ import annotations

import base64
import random
import threading
import uuid
from collections.abc import Mapping
from typing import Any

import orjson

from pyctrl.clock import Clock
from pyctrl.errors import ApiError, FieldCause, from_status
from pyctrl.kube.interface import RawObject
from pyctrl.kube.meta import format_time
from pyctrl.kube.patch import PatchError, json_patch, merge_patch
from pyctrl.kube.resource import Resource
from pyctrl.kube.selectors import parse_field_selector, parse_label_selector
from pyctrl.kube.status import (
    new_already_exists,
    new_bad_request,
    new_conflict,
    new_expired,
    new_internal_error,
    new_invalid,
    new_not_found,
    status_body,
)
from pyctrl.testing.fake_objects import (
    copy_any,
    copy_object,
    meta_of,
    name_of,
    resource_key,
    scope,
)
from pyctrl.testing.fake_watch import WatchFanOut

__all__ = ["ObjectTracker"]

_NO_STATUS = {("", "configmaps"), ("", "secrets"), ("", "events"), ("events.k8s.io", "events"),
              ("coordination.k8s.io", "leases"), ("", "serviceaccounts")}
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's generateName alphabet


def _invalid_patch(exc: PatchError) -> ApiError:
    return from_status(422, status_body(422, "Invalid", f"the patch could not be applied: {exc}"))


def _merge_owner_references(resource: Resource, name: str, old: RawObject, patch: RawObject,
                            patched: RawObject) -> None:
    """As the server merges an apply's ``ownerReferences`` (a list keyed by uid): the applied
    entries replace those of the same uid and the others stay; two controllers are refused
    (422, as the server's validation answers)."""
    sent = meta_of(patch).get("ownerReferences")
    if not isinstance(sent, list):
        return
    merged = {str(r.get("uid")): r for r in meta_of(old).get("ownerReferences") or []}
    merged.update({str(r.get("uid")): r for r in sent if isinstance(r, Mapping)})
    refs = list(merged.values())
    if sum(1 for r in refs if r.get("controller") is True) > 1:
        raise new_invalid(resource, name, [FieldCause(
            "metadata.ownerReferences", "FieldValueInvalid",
            "Only one reference can have Controller set to true")])
    meta_of(patched)["ownerReferences"] = refs


class ObjectTracker:
    """The stored objects of one FakeClient (see module docstring)."""

    def __init__(self, clock: Clock, lock: threading.RLock, watches: WatchFanOut, *,
                 seed: int = 0) -> None:
        self._clock = clock
        self._lock = lock
        self._watches = watches
        self._rv = 0
        self._objects: dict[tuple[str, str], dict[tuple[str, str], RawObject]] = {}
        self._status: dict[tuple[str, str], bool] = {}
        self._rand = random.Random(seed)

    @property
    def resource_version(self) -> int:
        """The current value of the global resourceVersion counter."""
        with self._lock:
            return self._rv

    def set_status_subresource(self, resource: Resource, enabled: bool = True) -> None:
        with self._lock:
            self._status[resource_key(resource)] = enabled

    def has_status_subresource(self, resource: Resource) -> bool:
        key = resource_key(resource)
        with self._lock:
            return self._status.get(key, key not in _NO_STATUS)

    def stored(self, resource: Resource) -> list[RawObject]:
        """The live stored objects of ``resource``, sorted by (namespace, name); the caller
        holds the lock and copies what it hands out."""
        store = self._objects.get(resource_key(resource), {})
        return [store[k] for k in sorted(store)]

    def list_objects(self, resource: Resource, namespace: str | None = None) -> list[RawObject]:
        with self._lock:
            store = self._objects.get(resource_key(resource), {})
            return [copy_object(store[k]) for k in sorted(store)
                    if namespace is None or k[0] == namespace]

    def get(self, resource: Resource, name: str, namespace: str | None) -> RawObject:
        ns = scope(resource, namespace)
        with self._lock:
            found = self._objects.get(resource_key(resource), {}).get((ns, name))
            if found is None:
                raise new_not_found(resource, name)
            return copy_object(found)

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def create(self, resource: Resource, obj: RawObject, namespace: str | None, *,
                keep_status: bool = False) -> RawObject:
        new: RawObject = copy_object(obj)
        ns = scope(resource, namespace, new)
        meta = meta_of(new)
        with self._lock:
            store = self._objects.setdefault(resource_key(resource), {})
            name = meta.get("name")
            if not name and meta.get("generateName"):
                name = meta["generateName"] + "".join(self._rand.choices(_NAME_CHARS, k=5))
                while (ns, name) in store:
                    name = meta["generateName"] + "".join(self._rand.choices(_NAME_CHARS, k=5))
                meta["name"] = name
            if not name:
                raise new_invalid(resource, "", [FieldCause(
                    "metadata.name", "FieldValueRequired",
                    "Required value: name or generateName is required")])
            if meta.get("resourceVersion"):
                raise new_internal_error(
                    "resourceVersion should not be set on objects to be created")
            if (ns, name) in store:
                raise new_already_exists(resource, str(name))
            new["apiVersion"] = new.get("apiVersion") or resource.api_version
            new["kind"] = new.get("kind") or resource.kind
            if resource.namespaced:
                meta["namespace"] = ns
            else:
                meta.pop("namespace", None)
            meta["uid"] = str(uuid.UUID(int=self._rand.getrandbits(128), version=4))
            meta["creationTimestamp"] = format_time(self._clock.now())
            meta["generation"] = 1
            for transient in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                meta.pop(transient, None)
            if not keep_status and self.has_status_subresource(resource):
                new.pop("status", None)
            meta["resourceVersion"] = str(self._next_rv())
            store[(ns, str(name))] = new
            self._watches.record(resource, "ADDED", new, None, self._rv)
            return copy_object(new)

    @staticmethod
    def _spec(obj: RawObject, exclude_status: bool) -> dict[str, Any]:
        skip = {"metadata", "apiVersion", "kind"} | ({"status"} if exclude_status else set())
        return {k: v for k, v in obj.items() if k not in skip}

    def _replace(self, resource: Resource, key: tuple[str, str], old: RawObject, new: RawObject, *,
                 status_only: bool, expected_rv: str | None) -> RawObject:
        """Store ``new`` over ``old`` like the server's update path; lock held by caller."""
        old_meta = old["metadata"]
        if expected_rv and str(expected_rv) != old_meta["resourceVersion"]:
            raise new_conflict(resource, key[1])
        has_status = self.has_status_subresource(resource)
        if status_only:
            result: RawObject = copy_object(old)
            if new.get("status") is not None:
                result["status"] = copy_any(new["status"])
            else:
                result.pop("status", None)
        else:
            result = new
            if has_status:
                if "status" in old:
                    result["status"] = copy_any(old["status"])
                else:
                    result.pop("status", None)
            meta = meta_of(result)
            for k in ("uid", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "namespace", "name", "generation"):
                if k in old_meta:
                    meta[k] = old_meta[k]
                else:
                    meta.pop(k, None)
            result["apiVersion"], result["kind"] = old["apiVersion"], old["kind"]
            if self._spec(result, has_status) != self._spec(old, has_status):
                meta["generation"] = int(old_meta.get("generation") or 0) + 1
        meta = meta_of(result)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if result == old:
            return copy_object(old)  # the server skips writes that change nothing
        meta["resourceVersion"] = str(self._next_rv())
        store = self._objects[resource_key(resource)]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            del store[key]
            self._watches.record(resource, "DELETED", result, None, self._rv)
            return copy_object(result)
        store[key] = result
        self._watches.record(resource, "MODIFIED", result, old, self._rv)
        return copy_object(result)

    def update(self, resource: Resource, ns: str, obj: RawObject, status_only: bool) -> RawObject:
        name = name_of(obj)
        if status_only and not self.has_status_subresource(resource):
            raise new_not_found(resource, name)
        with self._lock:
            old = self._objects.get(resource_key(resource), {}).get((ns, name))
            if old is None:
                raise new_not_found(resource, name)
            new: RawObject = copy_object(obj)
            return self._replace(resource, (ns, name), old, new, status_only=status_only,
                                 expected_rv=meta_of(new).get("resourceVersion"))

    def patch(self, resource: Resource, ns: str, name: str, patch: Any, *, patch_type: str,
               subresource: str | None) -> RawObject:
        if subresource not in (None, "status") or (
                subresource == "status" and not self.has_status_subresource(resource)):
            raise new_not_found(resource, name)
        if (patch_type == "json") != isinstance(patch, list) or not isinstance(patch,
                                                                                 list | dict):
            raise new_bad_request(f"a {patch_type} patch must be a JSON "
                                  f"{'array' if patch_type == 'json' else 'object'}")
        with self._lock:
            old = self._objects.get(resource_key(resource), {}).get((ns, name))
            sent_uid = meta_of(patch).get("uid") if isinstance(patch, dict) else None
            if old is None:
                if patch_type == "apply" and subresource is None and sent_uid:
                    raise new_conflict(resource, name, (
                        f"uid mismatch: the provided object specified uid {sent_uid}, and no "
                        "existing object was found"))
                if patch_type == "apply" and subresource is None:
                    body = copy_any(patch)
                    meta_of(body).update({"name": name})
                    return self.create(resource, body, ns or None)
                raise new_not_found(resource, name)
            try:
                patched: RawObject = copy_any(
                    json_patch(old, patch) if isinstance(patch, list) else merge_patch(old, patch))
            except PatchError as exc:
                raise _invalid_patch(exc) from exc
            new_uid = meta_of(patched).get("uid")
            if new_uid and new_uid != meta_of(old).get("uid"):
                raise new_invalid(resource, name, [FieldCause(
                    "metadata.uid", "FieldValueInvalid",
                    f"Invalid value: {new_uid!r}: field is immutable")])
            if patch_type == "apply" and subresource is None and isinstance(patch, dict):
                _merge_owner_references(resource, name, old, patch, patched)
            return self._replace(resource, (ns, name), old, patched,
                                 status_only=subresource == "status",
                                 expected_rv=meta_of(patched).get("resourceVersion"))

    def delete(self, resource: Resource, ns: str, name: str,
                preconditions: Mapping[str, str] | None) -> RawObject:
        with self._lock:
            store = self._objects.get(resource_key(resource), {})
            old = store.get((ns, name))
            if old is None:
                raise new_not_found(resource, name)
            meta = old["metadata"]
            for field_name, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
                want = (preconditions or {}).get(field_name)
                if want and want != meta.get(field_name):
                    raise new_conflict(resource, name, (
                        f"the {label} in the precondition ({want}) does not match the {label} "
                        f"in record ({meta.get(field_name)}). The object might have been "
                        + ("deleted and then recreated" if field_name == "uid" else "modified")))
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp"):
                    return copy_object(old)
                marked: RawObject = copy_object(old)
                meta_of(marked).update({
                    "deletionTimestamp": format_time(self._clock.now()),
                    "deletionGracePeriodSeconds": 0,
                    "resourceVersion": str(self._next_rv()),
                })
                store[(ns, name)] = marked
                self._watches.record(resource, "MODIFIED", marked, old, self._rv)
                return copy_object(marked)
            gone: RawObject = copy_object(old)
            del store[(ns, name)]
            meta_of(gone)["resourceVersion"] = str(self._next_rv())
            self._watches.record(resource, "DELETED", gone, None, self._rv)
            return copy_object(gone)

    def list_page(self, resource: Resource, ns: str, *, label_selector: str | None,
              field_selector: str | None, limit: int | None, continue_: str | None) -> RawObject:
        try:
            labels = parse_label_selector(label_selector)
            fields = parse_field_selector(field_selector)
        except ValueError as exc:
            raise new_bad_request(str(exc)) from exc
        with self._lock:
            list_rv, start = self._rv, None
            if continue_:
                list_rv, start = _decode_continue(continue_)
                if list_rv < self._watches.compacted:
                    raise new_expired("The provided continue parameter is too old to display "
                                      "a consistent list result.")
            store = self._objects.get(resource_key(resource), {})
            keys = [k for k in sorted(store) if (not ns or k[0] == ns)
                    and (start is None or k > start)]
            matched = [store[k] for k in keys
                       if labels.matches_object(store[k]) and fields.matches(store[k])]
            meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
            if limit and limit > 0 and len(matched) > limit:
                last = matched[limit - 1]["metadata"]
                meta["continue"] = _encode_continue(
                    list_rv, (str(last.get("namespace") or ""), str(last["name"])))
                meta["remainingItemCount"] = len(matched) - limit
                matched = matched[:limit]
            return {"apiVersion": resource.api_version, "kind": f"{resource.kind}List",
                    "metadata": meta, "items": [copy_object(o) for o in matched]}


def _encode_continue(rv: int, key: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"rv": rv, "start": list(key)})).decode()


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise new_bad_request("continue key is not valid") from exc
