"""Conversion webhooks through the real kube-apiserver: a ``Shelf`` kind served in v1alpha1
and v1 (stored), converted by :class:`pyctrl.api.Conversion` behind a local
:class:`pyctrl.webhook.WebhookServer`. Created in v1alpha1, read in v1; fields only v1 has
survive a read-modify-write through v1alpha1 (the stash annotation); the apiserver's own
requests (create, get, list, update in either version) all go through the webhook."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest

from pyctrl import RESTClient, api
from pyctrl.api import Maximum, MaxLength, Minimum, ServiceReference, WebhookConversion
from pyctrl.testing.envtest import ControlPlane, LocalWebhookServer, rewrite_conversion_webhook

pytestmark = pytest.mark.integration

CONVERSION = WebhookConversion(service=ServiceReference("shelf-system", "shelf-webhook",
                                                        path="/convert"))


class ShelfSpecV1alpha1(api.Struct):
    width: Annotated[api.Int32, Minimum(1), Maximum(1000)]


class ShelfSpec(api.Struct):
    width: Annotated[api.Int32, Minimum(1), Maximum(1000)]
    depth: Annotated[api.Int32, Minimum(1), Maximum(1000)] | None = None
    color: Annotated[str, MaxLength(32)] = ""


class ShelfStatus(api.Struct):
    observed_generation: api.Int64 | None = None


@api.kind("conv.pyctrl.io/v1alpha1", "Shelf", storage=False, conversion=CONVERSION)
class ShelfV1alpha1(api.Object):
    spec: ShelfSpecV1alpha1
    status: ShelfStatus = api.field(default_factory=ShelfStatus)


@api.kind("conv.pyctrl.io/v1", "Shelf", conversion=CONVERSION)
class Shelf(api.Object):
    spec: ShelfSpec
    status: ShelfStatus = api.field(default_factory=ShelfStatus)


def up(old: ShelfV1alpha1) -> Shelf:
    return Shelf(spec=ShelfSpec(width=old.spec.width), status=old.status)


def down(new: Shelf) -> ShelfV1alpha1:
    return ShelfV1alpha1(spec=ShelfSpecV1alpha1(width=new.spec.width), status=new.status)


ALPHA, V1 = api.resource_for(ShelfV1alpha1), api.resource_for(Shelf)


@pytest.fixture(scope="module")
def served(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[api.Conversion[Shelf]]:
    if control_plane.external:
        pytest.skip("the conversion webhook runs on 127.0.0.1: needs a local control plane")
    conversion = api.Conversion(Shelf)
    conversion.spoke(ShelfV1alpha1, to_hub=up, from_hub=down)
    directory = Path(tmp_path_factory.mktemp("conversion"))
    with LocalWebhookServer({"/convert": conversion}, directory) as server:
        doc = rewrite_conversion_webhook(api.crd([ShelfV1alpha1, Shelf]), server.url_base,
                                         server.ca_pem)
        assert doc["spec"]["conversion"]["webhook"]["clientConfig"]["url"].endswith("/convert")
        control_plane.install_crds([doc])
        yield conversion


def _content(obj: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, str]]:
    return (obj["apiVersion"], obj["spec"],
            (obj["metadata"].get("annotations") or {}))


def test_created_in_v1alpha1_read_in_v1_and_back(served: api.Conversion[Shelf],
                                                 client: RESTClient, namespace: str) -> None:
    created = client.create(ALPHA, {"apiVersion": "conv.pyctrl.io/v1alpha1", "kind": "Shelf",
                                    "metadata": {"name": "s1"}, "spec": {"width": 80}},
                            namespace)
    as_v1 = client.get(V1, "s1", namespace)
    assert as_v1["apiVersion"] == "conv.pyctrl.io/v1"
    assert as_v1["spec"] == {"width": 80}
    assert as_v1["metadata"]["uid"] == created["metadata"]["uid"]
    again = client.get(ALPHA, "s1", namespace)
    assert _content(again) == _content(created) == ("conv.pyctrl.io/v1alpha1", {"width": 80},
                                                    {})


def test_v1_only_fields_survive_a_write_through_v1alpha1(served: api.Conversion[Shelf],
                                                         client: RESTClient,
                                                         namespace: str) -> None:
    client.create(V1, {"apiVersion": "conv.pyctrl.io/v1", "kind": "Shelf",
                       "metadata": {"name": "s2"},
                       "spec": {"width": 80, "depth": 30, "color": "oak"}}, namespace)
    old = client.get(ALPHA, "s2", namespace)
    assert old["spec"] == {"width": 80}
    assert api.STASH_ANNOTATION in old["metadata"]["annotations"]
    old["spec"]["width"] = 120  # an old client edits what it knows and writes it all back
    client.update(ALPHA, old, namespace)
    new = client.get(V1, "s2", namespace)
    assert new["spec"] == {"width": 120, "depth": 30, "color": "oak"}
    assert api.STASH_ANNOTATION not in (new["metadata"].get("annotations") or {})
    listed = client.list(ALPHA, namespace)
    assert [o["spec"] for o in listed["items"]] == [{"width": 120}]
