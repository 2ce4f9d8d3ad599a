"""configmap_mirror: each labelled ConfigMap gets a Secret of the same name and data.

Contract: for every ConfigMap labelled ``pyctrl.io/mirror=true`` a Secret of the same name
and namespace holds its ``data`` (base64) and ``binaryData``, controlled by the ConfigMap:
changes propagate, and the garbage collector deletes the Secret with the ConfigMap. An
existing Secret this ConfigMap does not control is left alone (Warning event ``SecretExists``).
Typed throughout (the built-in ConfigMap and Secret of :mod:`pyctrl.models`): both are read
from the Builder's typed caches and the Secret is written by server-side apply through
``manager.client_for_leader()`` (fenced when leader election is on).
"""

from __future__ import annotations

import base64

import pyctrl
from pyctrl import Manager, Request
from pyctrl.api import ObjectMeta
from pyctrl.models.core_v1 import ConfigMap, Secret

NAME = "configmap-mirror"
SELECTOR = "pyctrl.io/mirror=true"


class Mirror:
    """Applies the Secret a ConfigMap asks for; reads both kinds from the cache."""

    def __init__(self, manager: Manager, builder: pyctrl.Builder) -> None:
        self.client = pyctrl.TypedClient(manager.client_for_leader())
        self.configmaps = builder.lister_for(ConfigMap)
        self.secrets = builder.lister_for(Secret)
        self.recorder = manager.event_recorder(NAME)

    def reconcile(self, request: Request) -> None:
        try:
            cm = self.configmaps.get(request.namespace, request.name)
        except pyctrl.NotFound:
            return  # deleted: the garbage collector deletes the Secret it controlled
        try:
            existing: Secret | None = self.secrets.get(request.namespace, request.name)
        except pyctrl.NotFound:
            existing = None
        if existing is not None and not pyctrl.is_controlled_by(existing, cm):
            self.recorder.event(cm, "Warning", "SecretExists", f"Secret {request.name!r} "
                                "exists and is not controlled by this ConfigMap; left alone")
            return
        data = {k: base64.b64encode(v.encode()).decode() for k, v in cm.data.items()}
        secret = Secret(metadata=ObjectMeta(name=request.name, namespace=request.namespace),
                        data=data | dict(cm.binary_data))
        self.client.apply(pyctrl.set_controller_reference(cm, secret), field_manager=NAME)


def setup(manager: Manager, *, workers: int = 2) -> pyctrl.Controller[Request]:
    """Mirror labelled ConfigMaps; a changed or deleted Secret is rewritten."""
    builder = (manager.controller(NAME, workers=workers)
               .for_(ConfigMap, label_selector=SELECTOR).owns(Secret))
    return builder.complete(Mirror(manager, builder))
