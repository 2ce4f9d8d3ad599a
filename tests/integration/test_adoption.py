"""Applying an owned child never adopts a user's object, against a real API server and its
garbage collector: the user's ConfigMap is refused and survives its would-be owner's deletion,
while the child the owner did create goes with it; the uid precondition of the steady state is
the real server's."""

from __future__ import annotations

import pytest

import pyctrl
from examples.website import Website, WebsiteSpec
from pyctrl import api
from pyctrl.errors import NotFound
from pyctrl.kube import CONFIGMAPS, RESTClient
from pyctrl.models.core_v1 import ConfigMap
from tests.waiting import poll

pytestmark = pytest.mark.integration


def _child(owner: Website, name: str, namespace: str) -> ConfigMap:
    return pyctrl.set_controller_reference(owner, ConfigMap(
        metadata=api.ObjectMeta(name=name, namespace=namespace), data={"from": "website"}))


def _gone(client: RESTClient, name: str, namespace: str) -> bool:
    try:
        client.get(CONFIGMAPS, name, namespace)
    except NotFound:
        return True
    return False


def test_a_users_configmap_is_never_adopted_and_outlives_the_owner(
        client: RESTClient, namespace: str) -> None:
    typed = pyctrl.TypedClient(client)
    client.create(CONFIGMAPS, {"metadata": {"name": "settings"}, "data": {"k": "the user's"}},
                  namespace)
    site = typed.create(Website(metadata=api.ObjectMeta(name="blog", namespace=namespace),
                                spec=WebsiteSpec(image="nginx")))

    with pytest.raises(pyctrl.AdoptionRefused, match="ConfigMap 'settings' exists and has no "
                                                     "controller"):
        typed.apply(_child(site, "settings", namespace), "website", force=True)
    assert "ownerReferences" not in client.get(CONFIGMAPS, "settings", namespace)["metadata"]

    ours = typed.apply(_child(site, "ours", namespace), "website", force=True)
    again = typed.apply(api.replace(_child(site, "ours", namespace), data={"v": "2"}),
                        "website", force=True)  # one PATCH, the uid as precondition
    assert again.metadata.uid == ours.metadata.uid and again.data == {"v": "2"}

    typed.delete(site)
    assert poll(lambda: _gone(client, "ours", namespace), timeout=60), (
        "kube-controller-manager's garbage collector did not delete the owned ConfigMap")
    kept = client.get(CONFIGMAPS, "settings", namespace)
    assert kept["data"] == {"k": "the user's"}  # not lost with the owner


def test_an_object_replaced_under_the_same_name_is_refused(
        client: RESTClient, namespace: str) -> None:
    typed = pyctrl.TypedClient(client)
    site = typed.create(Website(metadata=api.ObjectMeta(name="shop", namespace=namespace),
                                spec=WebsiteSpec(image="nginx")))
    typed.apply(_child(site, "shared", namespace), "website", force=True)
    client.delete(CONFIGMAPS, "shared", namespace)
    client.create(CONFIGMAPS, {"metadata": {"name": "shared"}, "data": {"k": "the user's"}},
                  namespace)
    with pytest.raises(pyctrl.AdoptionRefused):  # the remembered uid is refused: read again
        typed.apply(_child(site, "shared", namespace), "website", force=True)
    assert "ownerReferences" not in client.get(CONFIGMAPS, "shared", namespace)["metadata"]
