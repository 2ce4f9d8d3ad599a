"""Schema markers: what ``Annotated[T, ...]`` metadata and kind declarations mean to ``gen crd``.

Contract:

* A marker is a small frozen dataclass placed in ``typing.Annotated`` next to a field's type
  (``Annotated[str, MaxLength(64), Pattern("^[a-z]+$")]``); :mod:`pyctrl.api.schema` turns it
  into the OpenAPI v3 keyword of the same name. Markers never affect decoding (msgspec
  ignores ``Annotated`` metadata it does not know) and the apiserver, not the decoder,
  enforces them.
* A string inside ``Annotated`` is the field's description.
* :class:`Rule` is a CEL rule (``x-kubernetes-validations``); on a field it applies to that
  field's value, in a struct's ``__rules__`` class attribute to the whole struct. The
  generator refuses a rule whose ``self`` or any ``self.a.b`` path it names is a string,
  list or map without a bound (maxLength/enum, maxItems, maxProperties), because the
  apiserver would reject the CRD for an unbounded cost estimate, or, worse, accept a rule
  whose cost is only bounded by the request size.
* :class:`KindInfo` (set by :func:`kind`) holds what a CRD needs beyond the schema: names,
  scope, printer columns, subresources, served/storage flags and the conversion strategy.
  Several versions of one kind are several classes with the same group and kind.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from pyctrl.kube import meta

__all__ = [
    "Default",
    "Embedded",
    "Format",
    "KindInfo",
    "ListType",
    "MapType",
    "MaxItems",
    "MaxLength",
    "MaxProperties",
    "Maximum",
    "MinItems",
    "MinLength",
    "MinProperties",
    "Minimum",
    "Nullable",
    "Pattern",
    "PreserveUnknownFields",
    "PrinterColumn",
    "Required",
    "Rule",
    "Scale",
    "ServiceReference",
    "WebhookConversion",
    "is_required",
    "kind",
]

JSONValue = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]


@dataclass(frozen=True, slots=True)
class Minimum:
    """``minimum`` (inclusive) of an integer or number."""

    value: int | float


@dataclass(frozen=True, slots=True)
class Maximum:
    """``maximum`` (inclusive) of an integer or number."""

    value: int | float


@dataclass(frozen=True, slots=True)
class MinLength:
    """``minLength`` of a string."""

    value: int


@dataclass(frozen=True, slots=True)
class MaxLength:
    """``maxLength`` of a string (what bounds a CEL rule's cost over it)."""

    value: int


@dataclass(frozen=True, slots=True)
class Pattern:
    """``pattern``: an ECMA-262 regular expression the string must match."""

    regex: str


@dataclass(frozen=True, slots=True)
class Format:
    """``format``: e.g. ``int32``, ``int64``, ``date-time``, ``byte``, ``duration``."""

    name: str


@dataclass(frozen=True, slots=True)
class MinItems:
    """``minItems`` of a list."""

    value: int


@dataclass(frozen=True, slots=True)
class MaxItems:
    """``maxItems`` of a list."""

    value: int


@dataclass(frozen=True, slots=True)
class MinProperties:
    """``minProperties`` of a map."""

    value: int


@dataclass(frozen=True, slots=True)
class MaxProperties:
    """``maxProperties`` of a map."""

    value: int


@dataclass(frozen=True, slots=True)
class Default:
    """An explicit ``default`` (the apiserver fills it in when the field is absent).

    Without it, a field's Python default is published when it is a plain scalar (a
    non-empty str, int, float, bool or an Enum member); ``None``, ``""`` and container
    defaults mean "absent" and are not published. ``Default(None)`` is not allowed: use no default.
    """

    value: JSONValue

    def __post_init__(self) -> None:
        if self.value is None:
            raise ValueError("Default(None) is not a default; leave the field optional")


@dataclass(frozen=True, slots=True)
class _Flag:
    name: str


Nullable = _Flag("nullable")
"""``nullable: true``: the field may be sent as JSON null (kept, not dropped)."""
PreserveUnknownFields = _Flag("x-kubernetes-preserve-unknown-fields")
"""``x-kubernetes-preserve-unknown-fields: true`` on an object or free-form value."""
Required = _Flag("required")
"""Listed in the parent's ``required`` although the field has a Python default (which is then
not published): the API server refuses an object without it, while a stored object that
lacks it (written before the field was required, or through a laxer schema) still decodes,
with the default, for the controller to report instead of failing its whole cache."""


def is_required(tp: object) -> bool:
    """Whether a field's type is ``Annotated[..., Required, ...]`` (:data:`Required`)."""
    return typing.get_origin(tp) is typing.Annotated and any(
        marker is Required for marker in typing.get_args(tp)[1:])


@dataclass(frozen=True, slots=True)
class ListType:
    """``x-kubernetes-list-type`` (``atomic``, ``set`` or ``map``) and, for ``map``, the
    ``x-kubernetes-list-map-keys`` (each must be a required or defaulted scalar field)."""

    type: Literal["atomic", "set", "map"]
    keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.type == "map") != bool(self.keys):
            raise ValueError("ListType('map', keys=...) needs keys; other list types take none")

    @classmethod
    def map(cls, *keys: str) -> ListType:
        """A list-map keyed by the given (camelCase) field names."""
        return cls("map", tuple(keys))


@dataclass(frozen=True, slots=True)
class MapType:
    """``x-kubernetes-map-type``: ``atomic`` (replaced as a whole) or ``granular``."""

    type: Literal["atomic", "granular"]


@dataclass(frozen=True, slots=True)
class Rule:
    """A CEL validation rule (one ``x-kubernetes-validations`` entry)."""

    rule: str
    message: str = ""
    message_expression: str = ""
    reason: Literal["", "FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired",
                    "FieldValueDuplicate"] = ""
    field_path: str = ""
    optional_old_self: bool = False

    def __post_init__(self) -> None:
        if not self.rule.strip():
            raise ValueError("a CEL rule must not be empty")

    def to_schema(self) -> dict[str, JSONValue]:
        """The ``x-kubernetes-validations`` entry."""
        out: dict[str, JSONValue] = {"rule": self.rule}
        if self.message:
            out["message"] = self.message
        if self.message_expression:
            out["messageExpression"] = self.message_expression
        if self.reason:
            out["reason"] = self.reason
        if self.field_path:
            out["fieldPath"] = self.field_path
        if self.optional_old_self:
            out["optionalOldSelf"] = True
        return out


@dataclass(frozen=True, slots=True)
class Embedded:
    """A field whose schema is a Kubernetes type from the apiserver's OpenAPI (e.g.
    ``io.k8s.api.core.v1.PodTemplateSpec``), inlined as one structural schema.

    ``metadata_fields`` keeps only those ObjectMeta fields on the type's own ``metadata``
    (with ``metadata_description``); nested templates keep controller-gen's embedded set.
    ``required`` replaces the type's ``required`` list at the top.
    """

    definition: str
    metadata_fields: tuple[str, ...] | None = None
    metadata_description: str = ""
    required: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """One ``additionalPrinterColumns`` entry (``kubectl get`` column)."""

    name: str
    type: Literal["string", "integer", "number", "boolean", "date"]
    json_path: str
    description: str = ""
    format: str = ""
    priority: int = 0

    def to_schema(self) -> dict[str, JSONValue]:
        out: dict[str, JSONValue] = {"name": self.name, "type": self.type}
        if self.format:
            out["format"] = self.format
        if self.description:
            out["description"] = self.description
        if self.priority:
            out["priority"] = self.priority
        out["jsonPath"] = self.json_path
        return out


@dataclass(frozen=True, slots=True)
class Scale:
    """The scale subresource: where replicas live in spec and status."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str = ""

    def to_schema(self) -> dict[str, JSONValue]:
        out: dict[str, JSONValue] = {"specReplicasPath": self.spec_replicas_path,
                                     "statusReplicasPath": self.status_replicas_path}
        if self.label_selector_path:
            out["labelSelectorPath"] = self.label_selector_path
        return out


@dataclass(frozen=True, slots=True)
class ServiceReference:
    """The in-cluster Service a conversion webhook is served by."""

    namespace: str
    name: str
    path: str = "/convert"
    port: int = 443


@dataclass(frozen=True, slots=True)
class WebhookConversion:
    """``conversion: {strategy: Webhook}``: the apiserver calls ``service`` or ``url``.

    ``ca_bundle`` (base64 PEM) may stay empty when something injects it at deploy time
    (cert-manager's CA injector, or the test that installs the CRD).
    """

    service: ServiceReference | None = None
    url: str = ""
    ca_bundle: str = ""

    def __post_init__(self) -> None:
        if (self.service is None) == (not self.url):
            raise ValueError("WebhookConversion needs exactly one of service= or url=")

    def to_schema(self) -> dict[str, JSONValue]:
        config: dict[str, JSONValue] = {}
        if self.service is not None:
            s = self.service
            config["service"] = {"namespace": s.namespace, "name": s.name, "path": s.path,
                                 "port": s.port}
        else:
            config["url"] = self.url
        if self.ca_bundle:
            config["caBundle"] = self.ca_bundle
        return {"strategy": "Webhook", "webhook": {
            "clientConfig": config, "conversionReviewVersions": ["v1"]}}


@dataclass(frozen=True, slots=True)
class KindInfo:
    """A kind's identity (group, version, plural, scope) and what a CRD needs beyond one
    version's schema (see :func:`kind`). Built-in kinds (:mod:`pyctrl.models`) carry one
    too, with their own groups (``""`` for core); only CRD generation needs a dotted group."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    list_kind: str
    scope: Literal["Namespaced", "Cluster"] = "Namespaced"
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    served: bool = True
    storage: bool = True
    deprecated: bool = False
    deprecation_warning: str = ""
    status_subresource: bool = True
    scale: Scale | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()
    description: str = ""
    conversion: WebhookConversion | None = None
    rules: tuple[Rule, ...] = field(default=())
    builtin: bool = False  # a kind the API server serves itself: no CRD, any group

    def __post_init__(self) -> None:
        if not self.version or not self.kind or not self.plural:
            raise ValueError("group, version, kind and plural are required")
        if self.plural != self.plural.lower() or self.singular != self.singular.lower():
            raise ValueError("plural and singular must be lowercase")

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version  # core: "v1"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"


T = TypeVar("T", bound=type)


def kind(api_version: str, kind: str, *, plural: str = "", singular: str = "",
         scope: Literal["Namespaced", "Cluster"] = "Namespaced",
         short_names: tuple[str, ...] = (), categories: tuple[str, ...] = (),
         served: bool = True, storage: bool = True, deprecated: bool = False,
         deprecation_warning: str = "", status_subresource: bool = True,
         scale: Scale | None = None, printer_columns: tuple[PrinterColumn, ...] = (),
         description: str = "", conversion: WebhookConversion | None = None,
         rules: tuple[Rule, ...] = (), builtin: bool = False) -> Callable[[T], T]:
    """Class decorator declaring an :class:`~pyctrl.api.Object` subclass as one version of a
    kind (``api_version`` is ``group/version``). ``plural`` defaults to the lowercased kind
    plus "s"; ``rules`` are CEL rules on the whole object (``self.metadata.name`` etc.).
    ``builtin=True`` declares (part of) a kind the API server serves itself (``"v1"``,
    ``"apps/v1"``): it has a Resource for clients and the Builder, and no CRD."""
    group, version = meta.group_version(api_version)
    info = KindInfo(
        group=group, version=version, kind=kind, plural=plural or f"{kind.lower()}s",
        singular=singular or kind.lower(), list_kind=f"{kind}List", scope=scope,
        short_names=short_names, categories=categories, served=served, storage=storage,
        deprecated=deprecated, deprecation_warning=deprecation_warning,
        status_subresource=status_subresource, scale=scale, printer_columns=printer_columns,
        description=description, conversion=conversion, rules=rules, builtin=builtin)

    def decorate(cls: T) -> T:
        cls.__kind__ = info  # type: ignore[attr-defined]
        return cls

    return decorate
