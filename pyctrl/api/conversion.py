"""Hub-and-spoke conversion between a kind's versions, served as a ConversionReview webhook.

Contract:

* :class:`Conversion` has one hub class (usually the storage version) and any number of
  spokes, each registered with a ``to_hub`` and a ``from_hub`` function on typed objects
  (:meth:`Conversion.spoke`). Any version converts to any other through the hub
  (spoke -> hub -> spoke), so N versions need 2(N-1) functions, not N(N-1).
* Functions only build ``spec``/``status`` (and any other top-level field): the converted
  object keeps the input's ``metadata`` as it is (the apiserver refuses a conversion that
  changes anything but labels and annotations), with ``apiVersion`` set to the target.
* Lossless round trips: converting the hub down to a spoke that cannot hold some of its
  fields stores the hub's fields in the annotation :data:`STASH_ANNOTATION` (JSON) of the
  spoke; converting that spoke back up restores exactly the fields the spoke could not hold
  (found by converting the stashed hub down and up again and comparing), while the fields
  the spoke holds come from the spoke (so edits made through the old version win). The
  annotation never appears on the hub, and only on a spoke that would lose something.
  Whoever writes the spoke writes the annotation too, and the API server validates the
  spoke's schema, not the hub's: every value restored from it is checked against the hub's
  schema bounds (:func:`pyctrl.api.bounds.violations`: types, minimum/maximum, lengths,
  patterns, item counts, enums, required fields, map-list keys; not CEL), and a violation
  fails the conversion (:class:`ConversionError` naming the field), so a forged stash can
  not store ``maxReplicas: -5`` or 17 routes where the hub allows 16.
* :meth:`Conversion.handle_review` answers an ``apiextensions.k8s.io/v1`` ConversionReview
  (``pyctrl.webhook.ReviewHandler``): ``server.register("/convert", conversion)``. A failing
  conversion answers ``result.status: Failure`` with the error (the apiserver then fails the
  request); an unreadable review raises :class:`pyctrl.webhook.ReviewError` (HTTP 400).
* :meth:`Conversion.convert` is the same conversion on one raw object, for tests.
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson
import structlog

from pyctrl.api.bounds import violations
from pyctrl.api.crd import kind_info
from pyctrl.api.schema import object_schema
from pyctrl.api.typed import DecodeError, decode, encode
from pyctrl.api.types import Object
from pyctrl.webhook.admission import ReviewError

__all__ = ["CONVERSION_REVIEW_API_VERSION", "STASH_ANNOTATION", "Conversion",
           "ConversionError"]

log = structlog.get_logger(__name__)

CONVERSION_REVIEW_API_VERSION = "apiextensions.k8s.io/v1"
STASH_ANNOTATION = "conversion.pyctrl.io/hub-data"

H = TypeVar("H", bound=Object)
S = TypeVar("S", bound=Object)
Raw = dict[str, Any]
_MISSING = object()


class ConversionError(ValueError):
    """An object cannot be converted (unknown version, or a convert function failed)."""


@dataclass(frozen=True, slots=True)
class _Spoke:
    cls: type[Object]
    to_hub: Callable[[Any], Object]
    from_hub: Callable[[Any], Object]


class Conversion(Generic[H]):
    """Hub-and-spoke conversion for one kind (module docstring)."""

    def __init__(self, hub: type[H]) -> None:
        self.hub = hub
        info = kind_info(hub)
        self.group, self.kind = info.group, info.kind
        self._spokes: dict[str, _Spoke] = {}
        self._schema: Mapping[str, Any] | None = None  # the hub's, built at first need

    def spoke(self, cls: type[S], *, to_hub: Callable[[S], H],
              from_hub: Callable[[H], S]) -> None:
        """Register a version ``cls`` and its two convert functions."""
        info = kind_info(cls)
        if (info.group, info.kind) != (self.group, self.kind):
            raise ValueError(f"{cls.__name__} is {info.api_version} {info.kind}, not a "
                             f"version of {self.group} {self.kind}")
        if info.api_version == self.hub_api_version or info.api_version in self._spokes:
            raise ValueError(f"{info.api_version} is already registered")
        self._spokes[info.api_version] = _Spoke(cls, to_hub, from_hub)

    @property
    def hub_api_version(self) -> str:
        return kind_info(self.hub).api_version

    @property
    def api_versions(self) -> tuple[str, ...]:
        """Every version this conversion serves, hub first."""
        return (self.hub_api_version, *self._spokes)

    # -- one object ------------------------------------------------------------------------------
    def convert(self, obj: Mapping[str, Any], desired_api_version: str) -> Raw:
        """``obj`` (raw) in ``desired_api_version`` (module docstring)."""
        source = str(obj.get("apiVersion", ""))
        for version in (source, desired_api_version):
            if version not in self.api_versions:
                raise ConversionError(f"{self.kind} has no version {version!r} "
                                      f"(known: {', '.join(self.api_versions)})")
        if source == desired_api_version:
            return copy.deepcopy(dict(obj))
        hub = self._up(obj) if source != self.hub_api_version else _body(obj)
        if desired_api_version == self.hub_api_version:
            out = _with_body(obj, self.hub_api_version, hub)
            _annotations(out).pop(STASH_ANNOTATION, None)
            _drop_empty_annotations(out)
            return out
        return self._down(obj, hub, desired_api_version)

    def _up(self, obj: Mapping[str, Any]) -> Raw:
        """The hub body of a spoke object, restoring what its stash holds."""
        spoke = self._spokes[str(obj["apiVersion"])]
        converted = _body_of(spoke.to_hub(decode(spoke.cls, obj)))
        meta = obj.get("metadata") or {}
        stash_text = (meta.get("annotations") or {}).get(STASH_ANNOTATION)
        if not stash_text:
            return converted
        try:
            stashed = orjson.loads(stash_text)
        except orjson.JSONDecodeError as err:
            raise ConversionError(f"bad {STASH_ANNOTATION} annotation: {err}") from None
        # What the spoke cannot hold: the differences between the stashed hub and the
        # stashed hub sent down to this spoke and back up.
        if not isinstance(stashed, dict):
            raise ConversionError(f"bad {STASH_ANNOTATION} annotation: not a JSON object")
        try:
            round_trip = self._round_trip(spoke, obj, stashed)
        except DecodeError as err:  # the stash is not even of the hub's types
            raise ConversionError(f"bad {STASH_ANNOTATION} annotation: {err}") from None
        restored: list[tuple[str, Any]] = []
        out = _restore(converted, stashed, round_trip, "", restored)
        schema = self._hub_schema()
        problems = [v for path, value in restored
                    for v in violations(value, _node(schema, path), path)]
        if problems:
            raise ConversionError(f"bad {STASH_ANNOTATION} annotation: "
                                  + "; ".join(problems[:5]))
        return out

    def _hub_schema(self) -> Mapping[str, Any]:
        if self._schema is None:
            self._schema = object_schema(self.hub)
        return self._schema

    def _round_trip(self, spoke: _Spoke, obj: Mapping[str, Any], hub_body: Raw) -> Raw:
        hub_obj = decode(self.hub, _with_body(obj, self.hub_api_version, hub_body))
        down = spoke.from_hub(hub_obj)
        return _body_of(spoke.to_hub(decode(spoke.cls, _with_body(
            obj, kind_info(spoke.cls).api_version, _body_of(down)))))

    def _down(self, obj: Mapping[str, Any], hub_body: Raw, api_version: str) -> Raw:
        spoke = self._spokes[api_version]
        hub_obj = decode(self.hub, _with_body(obj, self.hub_api_version, hub_body))
        out = _with_body(obj, api_version, _body_of(spoke.from_hub(hub_obj)))
        annotations = _annotations(out)
        annotations.pop(STASH_ANNOTATION, None)
        if self._round_trip(spoke, obj, hub_body) != hub_body:
            annotations[STASH_ANNOTATION] = orjson.dumps(
                hub_body, option=orjson.OPT_SORT_KEYS).decode()
        _drop_empty_annotations(out)
        return out

    # -- the webhook ------------------------------------------------------------------------------
    def handle_review(self, review: Mapping[str, object]) -> dict[str, object]:
        """Answer a ConversionReview (``pyctrl.webhook.ReviewHandler``)."""
        if review.get("apiVersion") != CONVERSION_REVIEW_API_VERSION or (
                review.get("kind") != "ConversionReview"):
            raise ReviewError(f"expected a {CONVERSION_REVIEW_API_VERSION} ConversionReview")
        request = review.get("request")
        if not isinstance(request, Mapping) or not isinstance(request.get("uid"), str):
            raise ReviewError("the ConversionReview has no request with a uid")
        desired = request.get("desiredAPIVersion")
        objects = request.get("objects")
        if not isinstance(desired, str) or not isinstance(objects, list):
            raise ReviewError("the ConversionReview request needs desiredAPIVersion and "
                              "objects")
        response: dict[str, object] = {"uid": request["uid"]}
        try:
            response["convertedObjects"] = [self.convert(o, desired) for o in objects]
            response["result"] = {"status": "Success"}
        except Exception as err:  # any failure is the apiserver's to report, not a 500
            log.info("conversion failed", kind=self.kind, desired=desired, error=str(err))
            response["result"] = {"status": "Failure", "message": f"{self.kind}: {err}"}
        return {"apiVersion": CONVERSION_REVIEW_API_VERSION, "kind": "ConversionReview",
                "response": response}


def _body(obj: Mapping[str, Any]) -> Raw:
    return {k: copy.deepcopy(v) for k, v in obj.items()
            if k not in ("apiVersion", "kind", "metadata")}


def _body_of(obj: Object) -> Raw:
    return {k: v for k, v in encode(obj).items() if k not in ("apiVersion", "kind", "metadata")}


def _with_body(obj: Mapping[str, Any], api_version: str, body: Mapping[str, Any]) -> Raw:
    return {"apiVersion": api_version, "kind": obj.get("kind"),
            "metadata": copy.deepcopy(obj.get("metadata") or {}), **copy.deepcopy(dict(body))}


def _annotations(obj: Raw) -> dict[str, str]:
    """The annotations of ``obj`` (a converted copy), created empty when missing."""
    meta = obj.setdefault("metadata", {})
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = meta["annotations"] = {}
    return typing.cast(dict[str, str], annotations)


def _drop_empty_annotations(obj: Raw) -> None:
    meta = obj.get("metadata") or {}
    if meta.get("annotations") == {}:
        del meta["annotations"]


def _restore(converted: Raw, stashed: Raw, round_trip: Raw, path: str,
             restored: list[tuple[str, Any]]) -> Raw:
    """``converted`` with every path where ``round_trip`` differs from ``stashed`` set back
    to the stashed value (removed when the stash did not have it); each value set back is
    added to ``restored`` with its path."""
    out = copy.deepcopy(converted)
    for key in set(stashed) | set(round_trip):
        want = stashed.get(key, _MISSING)
        got = round_trip.get(key, _MISSING)
        if want == got:
            continue
        where = f"{path}.{key}" if path else str(key)
        if isinstance(want, dict) and isinstance(got, dict):
            base = out.get(key)
            out[key] = _restore(base if isinstance(base, dict) else {}, want, got, where,
                                restored)
        elif want is _MISSING:
            out.pop(key, None)
        else:
            out[key] = copy.deepcopy(want)
            restored.append((where, want))
    return out


def _node(schema: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """The schema of the field at ``path`` (dotted names); {} (anything) when unknown."""
    node: Any = schema
    for name in path.split("."):
        props = node.get("properties") or {}
        extra = node.get("additionalProperties")
        node = props.get(name, extra if isinstance(extra, Mapping) else None)
        if not isinstance(node, Mapping):
            return {}
    return typing.cast(Mapping[str, Any], node)
