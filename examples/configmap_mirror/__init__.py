"""configmap_mirror: each labelled ConfigMap gets a Secret of the same name and data.

Contract: for every ConfigMap labelled ``pyctrl.io/mirror=true`` a Secret of the same name
and namespace holds its ``data`` (base64) and ``binaryData``, controlled by the ConfigMap:
changes propagate, and the garbage collector deletes the Secret with the ConfigMap. An
existing Secret this ConfigMap does not control is left alone (Warning event ``SecretExists``).
Writes go through ``manager.client_for_leader()`` (fenced when leader election is on).
"""

from __future__ import annotations

import base64

import pyctrl
from pyctrl import CONFIGMAPS, SECRETS, Manager, Object, Request

NAME = "configmap-mirror"
SELECTOR = "pyctrl.io/mirror=true"


class Mirror:
    """Writes the Secret a ConfigMap asks for; reads ConfigMaps from the cache."""

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client_for_leader()
        self.configmaps = manager.informers.lister_for(CONFIGMAPS, label_selector=SELECTOR)
        self.recorder = manager.event_recorder(NAME)

    def reconcile(self, request: Request) -> None:
        try:
            cm = self.configmaps.get(request.namespace, request.name)
        except pyctrl.NotFound:
            return  # deleted: the garbage collector deletes the Secret it controlled
        data = {k: base64.b64encode(v.encode()).decode() for k, v in (cm.get("data") or {}).items()}
        data.update(cm.get("binaryData") or {})

        def mutate(secret: Object) -> None:
            if "uid" in secret["metadata"] and not pyctrl.is_controlled_by(secret, cm):
                raise pyctrl.AlreadyOwned(request.name, pyctrl.controller_of(secret))
            pyctrl.set_controller_reference(cm, secret)
            secret["data"] = data

        secret: Object = {"metadata": {"name": request.name, "namespace": request.namespace}}
        try:
            pyctrl.create_or_update(self.client, SECRETS, secret, mutate)
        except pyctrl.AlreadyOwned as err:
            self.recorder.event(cm, "Warning", "SecretExists", str(err))


def setup(manager: Manager, *, workers: int = 2) -> pyctrl.Controller[Request]:
    """Mirror labelled ConfigMaps; a changed or deleted Secret is rewritten."""
    return (manager.controller(NAME, workers=workers).for_(CONFIGMAPS, label_selector=SELECTOR)
            .owns(SECRETS).complete(Mirror(manager)))

