"""CronJob defaulting: the CRD schema's defaults, as a patch or applied to a copy.

Contract: :data:`DEFAULTS` (``spec`` key -> value) are the non-None field defaults of
:class:`cronjob_controller.crd.CronJobSpec`, which the CRD publishes as its ``default``
values (derived, never listed); :func:`default_patch` is the JSON Patch the mutating webhook
returns (only fields that are absent or null), :func:`with_defaults` applies the same to a
deep copy (never the input). Users import these names from :mod:`cronjob_controller.api`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import MappingProxyType

import msgspec

from cronjob_controller.crd import CronJobSpec
from pyctrl.api import is_required

__all__ = ["DEFAULTS", "default_patch", "with_defaults"]

DEFAULTS: Mapping[str, object] = MappingProxyType({
    f.encode_name: f.default for f in msgspec.structs.fields(CronJobSpec)
    if f.default is not msgspec.NODEFAULT and f.default is not None
    and not is_required(f.type)})


def default_patch(obj: Mapping[str, object]) -> list[dict[str, object]]:
    """JSON Patch operations adding the CRD defaults that ``obj.spec`` lacks."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    return [{"op": "add", "path": f"/spec/{key}", "value": value}
            for key, value in DEFAULTS.items() if spec.get(key) is None]


def with_defaults(obj: Mapping[str, object]) -> dict[str, object]:
    """A deep copy of ``obj`` with the CRD defaults filled in."""
    out = copy.deepcopy(dict(obj))
    spec = out.get("spec")
    if isinstance(spec, dict):
        for key, value in DEFAULTS.items():
            if spec.get(key) is None:
                spec[key] = value
    return out
