"""pyctrl.api: declare a kind's spec and status as typed classes; CRDs and typed reads from them.

A kind is a :class:`Object` subclass with ``spec``/``status`` fields of :class:`Struct`
types, declared with :func:`kind`; schema markers (:class:`MaxLength`, :class:`Minimum`,
:class:`ListType`, :class:`Rule`, ...) go in ``typing.Annotated``. ``python -m pyctrl gen crd
MODULE`` writes its CustomResourceDefinition (:func:`crd`, :func:`to_yaml`). A reconciler
reads cached objects typed (a typed informer's ``pyctrl.Lister[Kind]``, or :func:`decode`)
and writes status back with :func:`status_patch`; :func:`resource_for` gives the Resource for
clients and informers.
:class:`TypedClient` is the client's verbs on kind classes and typed objects;
:class:`Unstructured` is an object of a kind without a class, behind the same protocol, and
:class:`PartialObjectMetadata` the lean metadata-only form.

Why msgspec Structs (see docs/DESIGN.md for the measurements): decoding a cached object into
its typed class is the cost every typed read pays, and msgspec's is the lowest of the
candidates while its classes type-check like dataclasses.
"""

from pyctrl.api.client import TypedClient
from pyctrl.api.conversion import STASH_ANNOTATION, Conversion, ConversionError
from pyctrl.api.crd import crd, crds, kind_info, to_yaml
from pyctrl.api.markers import (
    Default,
    Embedded,
    Format,
    KindInfo,
    ListType,
    MapType,
    Maximum,
    MaxItems,
    MaxLength,
    MaxProperties,
    Minimum,
    MinItems,
    MinLength,
    MinProperties,
    Nullable,
    Pattern,
    PreserveUnknownFields,
    PrinterColumn,
    Required,
    Rule,
    Scale,
    ServiceReference,
    WebhookConversion,
    is_required,
    kind,
)
from pyctrl.api.partial import PartialObjectMetadata
from pyctrl.api.schema import SchemaError, object_schema, type_schema
from pyctrl.api.typed import (
    DecodeError,
    Equal,
    convert,
    decode,
    encode,
    json_decoder,
    merge_patch,
    prepare,
    resource_for,
    status_changes,
    status_patch,
    unset_equals_empty,
)
from pyctrl.api.types import (
    Condition,
    Int32,
    Int64,
    JobTemplateSpec,
    Object,
    ObjectMeta,
    OwnerReference,
    PodTemplateSpec,
    Struct,
    field,
    replace,
)
from pyctrl.api.unstructured import Unstructured, UnstructuredDecodeError

__all__ = [
    "STASH_ANNOTATION",
    "Condition",
    "Conversion",
    "ConversionError",
    "DecodeError",
    "Default",
    "Embedded",
    "Equal",
    "Format",
    "Int32",
    "Int64",
    "JobTemplateSpec",
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
    "Object",
    "ObjectMeta",
    "OwnerReference",
    "PartialObjectMetadata",
    "Pattern",
    "PodTemplateSpec",
    "PreserveUnknownFields",
    "PrinterColumn",
    "Required",
    "Rule",
    "Scale",
    "SchemaError",
    "ServiceReference",
    "Struct",
    "TypedClient",
    "Unstructured",
    "UnstructuredDecodeError",
    "WebhookConversion",
    "convert",
    "crd",
    "crds",
    "decode",
    "encode",
    "field",
    "is_required",
    "json_decoder",
    "kind",
    "kind_info",
    "merge_patch",
    "object_schema",
    "prepare",
    "replace",
    "resource_for",
    "status_changes",
    "status_patch",
    "to_yaml",
    "type_schema",
    "unset_equals_empty",
]
