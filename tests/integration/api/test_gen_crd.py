"""The CRD ``gen crd`` writes for the sample kinds is accepted by the real apiserver, which
then enforces every generated constraint (each bad object below is refused for its reason),
applies the published defaults, serves the scale subresource and the printer columns."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from pyctrl import RESTClient
from pyctrl.api import crd, decode, resource_for
from pyctrl.errors import Invalid
from pyctrl.testing.envtest import ControlPlane
from tests.unit.api.sample_kinds import Website, WebsiteV1alpha1

pytestmark = pytest.mark.integration
WEBSITES = resource_for(Website)


@pytest.fixture(scope="module")
def installed(control_plane: ControlPlane) -> Iterator[None]:
    if control_plane.external:
        pytest.skip("installs a CRD: needs a control plane started by envtest")
    doc = crd([WebsiteV1alpha1, Website])
    # No conversion webhook runs here (tests/integration/api/test_conversion.py has one):
    # objects are only created and read in the storage version, v1.
    del doc["spec"]["conversion"]
    control_plane.install_crds([doc])
    yield


def good(name: str = "site") -> dict[str, Any]:
    return {"apiVersion": "web.pyctrl.io/v1", "kind": "Website", "metadata": {"name": name},
            "spec": {"host": "example.com", "image": "nginx:1.27", "maxReplicas": 5,
                     "routes": [{"path": "/"}, {"path": "/api", "port": 8080}]}}


def test_good_object_is_stored_with_defaults(installed: None, client: RESTClient,
                                             namespace: str) -> None:
    stored = client.create(WEBSITES, good(), namespace)
    assert stored["spec"]["replicas"] == 1 and stored["spec"]["tier"] == "free"
    assert stored["spec"]["routes"][0]["port"] == 80
    typed = decode(Website, stored)
    assert typed.spec.routes[1].port == 8080 and typed.metadata.namespace == namespace


def _set(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node[key]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return out


_DELETE = object()
BAD = [
    ("spec.replicas", 101, "spec.replicas"),                        # maximum
    ("spec.replicas", 5, "replicas must not exceed maxReplicas"),   # CEL on the struct
    ("spec.tier", "gold", "supported values"),                      # enum from Literal
    ("spec.host", "Not A Host", "spec.host"),                       # pattern
    ("spec.image", "x" * 513, "spec.image"),                        # maxLength
    ("spec.host", _DELETE, "spec.host: Required value"),            # required
    ("spec.routes", [{"path": "/"}, {"path": "/"}], "Duplicate value"),  # list-map key
    ("spec.routes", [{"path": "/"}] * 17, "must have at most 16 items"),  # maxItems
    ("spec.routes", [{"path": "no-slash"}], "spec.routes[0].path"),      # pattern in items
    ("metadata.name", "n" * 41, "name too long"),                   # CEL on the object
]


@pytest.mark.parametrize(("path", "value", "reason"), BAD,
                         ids=[f"{p}-{r[:20]}" for p, _, r in BAD])
def test_bad_object_is_refused(installed: None, client: RESTClient, namespace: str,
                               path: str, value: Any, reason: str) -> None:
    obj = good("bad")
    if path == "spec.replicas" and value == 5:
        obj["spec"]["maxReplicas"] = 2
    with pytest.raises(Invalid) as err:
        client.create(WEBSITES, _set(obj, path, value), namespace)
    assert reason in str(err.value), str(err.value)


def test_scale_subresource_and_printer_columns(installed: None, client: RESTClient,
                                               control_plane: ControlPlane,
                                               namespace: str) -> None:
    client.create(WEBSITES, good("scaled"), namespace)
    scale = json.loads(control_plane.kubectl(
        "get", "--raw", f"/apis/web.pyctrl.io/v1/namespaces/{namespace}/websites/scaled/scale"
    ).stdout)
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1
    # By its full name: the session's plane also serves examples/website's Website, whose
    # short name is "ws" too, and kubectl resolves the short name to that one.
    table = control_plane.kubectl("get", "websites.web.pyctrl.io", "-n", namespace,
                                  "-o", "wide").stdout
    header = table.splitlines()[0].split()
    assert header[:4] == ["NAME", "HOST", "REPLICAS", "URL"], table
    assert "example.com" in table
    assert "scaled" in control_plane.kubectl("get", "pyctrl", "-n", namespace).stdout

