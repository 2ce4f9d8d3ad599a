"""pyctrl.TypedClient against a real API server: reads decoded from the response bytes,
server-side apply of a partial typed object (an explicit 0 is applied), the status diff write
refused with 409 Conflict from a stale copy, typed owner references the server keeps."""

from __future__ import annotations

import pytest

import pyctrl
from examples.website import Website, WebsiteSpec
from pyctrl import api
from pyctrl.errors import Conflict
from pyctrl.kube import RESTClient
from pyctrl.models.apps_v1 import Deployment, DeploymentSpec
from pyctrl.models.core_v1 import Container, PodSpec, PodTemplateSpec
from pyctrl.models.meta_v1 import LabelSelector

pytestmark = pytest.mark.integration


def test_typed_client_end_to_end(client: RESTClient, namespace: str) -> None:
    typed = pyctrl.TypedClient(client)
    site = typed.create(Website(metadata=api.ObjectMeta(name="typed", namespace=namespace),
                                spec=WebsiteSpec(image="nginx:1.27", replicas=2)))
    assert site.metadata.uid and site.metadata.generation == 1
    assert typed.get(Website, "typed", namespace) == site
    assert typed.list(Website, namespace) == [site]

    labels = {"app": "typed"}
    deployment = pyctrl.set_controller_reference(site, Deployment(
        metadata=api.ObjectMeta(name="typed", namespace=namespace),
        spec=DeploymentSpec(replicas=0, selector=LabelSelector(match_labels=labels),
                            template=PodTemplateSpec(metadata=api.ObjectMeta(labels=labels),
                                                     spec=PodSpec(containers=[Container(
                                                         name="web", image="nginx")])))))
    applied = typed.apply(deployment, "typed-test", force=True)
    assert applied.spec.replicas == 0  # sent, not the default 1
    (ref,) = applied.metadata.owner_references
    assert (ref.kind, ref.uid, ref.controller) == ("Website", site.metadata.uid, True)

    ready = api.replace(site, status=api.replace(site.status, observed_generation=1))
    written = typed.patch_status(site, ready)
    assert written.status.observed_generation == 1
    assert written.metadata.resource_version != site.metadata.resource_version
    with pytest.raises(Conflict):  # site is stale now: never written over the newer status
        typed.patch_status(site, api.replace(site, status=api.replace(
            site.status, observed_generation=7)))
    assert typed.get(Website, "typed", namespace).status.observed_generation == 1
    typed.delete(Deployment, "typed", namespace)
    typed.delete(written)


def test_apply_of_a_child_another_controller_owns_raises_already_owned(
        client: RESTClient, namespace: str) -> None:
    typed = pyctrl.TypedClient(client)
    first, second = (typed.create(Website(
        metadata=api.ObjectMeta(name=name, namespace=namespace),
        spec=WebsiteSpec(image="nginx"))) for name in ("first", "second"))

    def child(owner: Website) -> Deployment:
        labels = {"app": "shared"}
        return pyctrl.set_controller_reference(owner, Deployment(
            metadata=api.ObjectMeta(name="shared", namespace=namespace),
            spec=DeploymentSpec(selector=LabelSelector(match_labels=labels),
                                template=PodTemplateSpec(
                                    metadata=api.ObjectMeta(labels=labels),
                                    spec=PodSpec(containers=[Container(name="web",
                                                                       image="nginx")])))))

    typed.apply(child(first), "first", force=True)
    with pytest.raises(pyctrl.AlreadyOwned, match="already controlled by Website 'first'"):
        typed.apply(child(second), "second", force=True)
    (ref,) = typed.get(Deployment, "shared", namespace).metadata.owner_references
    assert ref.uid == first.metadata.uid  # not stolen
