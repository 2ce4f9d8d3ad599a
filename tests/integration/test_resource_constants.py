"""Every Resource constant in pyctrl.kube names what the real apiserver serves: the plural is
listed in the group/version's discovery document with the same kind and scope."""

from __future__ import annotations

import json

import pytest

import pyctrl.kube.resource as resources
from pyctrl.kube import Resource
from pyctrl.testing.envtest import ControlPlane

pytestmark = pytest.mark.integration


def test_every_constant_matches_discovery(control_plane: ControlPlane) -> None:
    constants = [getattr(resources, n) for n in resources.__all__ if n.isupper()]
    assert len(constants) >= 20
    documents: dict[str, dict[str, tuple[str, bool]]] = {}
    mismatches = []
    for res in constants:
        assert isinstance(res, Resource)
        if res.base_path not in documents:
            doc = json.loads(control_plane.kubectl("get", "--raw", res.base_path).stdout)
            documents[res.base_path] = {r["name"]: (r["kind"], r["namespaced"])
                                        for r in doc["resources"]}
        served = documents[res.base_path].get(res.plural)
        if served != (res.kind, res.namespaced):
            mismatches.append(f"{res}: constant says {(res.kind, res.namespaced)}, "
                              f"the apiserver serves {served}")
    assert mismatches == []
