"""pyctrl.api.Conversion: hub-and-spoke conversion, lossless round trips, ConversionReview."""

from __future__ import annotations

import copy
import re
from typing import Any

import orjson
import pytest

from pyctrl import api
from pyctrl.webhook import ReviewError, ReviewHandler, handle_review
from tests.unit.api.sample_kinds import Cluster, Website, website_conversion

V1, ALPHA = "web.pyctrl.io/v1", "web.pyctrl.io/v1alpha1"
META = {"name": "a", "namespace": "ns", "uid": "u-1", "resourceVersion": "5",
        "labels": {"app": "web"}, "creationTimestamp": "2026-11-26T08:00:00Z"}


def v1(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "Website", "metadata": copy.deepcopy(META),
            "spec": {"host": "example.com", "image": "nginx", "replicas": 2, **spec},
            "status": {"url": "http://example.com"}}


def alpha() -> dict[str, Any]:
    return {"apiVersion": ALPHA, "kind": "Website", "metadata": copy.deepcopy(META),
            "spec": {"host": "example.com", "image": "nginx", "replicas": 2},
            "status": {"url": "http://example.com"}}


def test_spoke_up_to_the_hub_keeps_metadata() -> None:
    out = website_conversion().convert(alpha(), V1)
    assert out == v1()


def test_hub_down_without_loss_adds_no_annotation() -> None:
    out = website_conversion().convert(v1(), ALPHA)
    assert out == alpha()


def test_round_trip_through_the_old_version_is_lossless() -> None:
    conversion = website_conversion()
    full = v1(maxReplicas=5, tier="paid", routes=[{"path": "/", "port": 8080}])
    down = conversion.convert(full, ALPHA)
    assert set(down["spec"]) == {"host", "image", "replicas"}
    stash = orjson.loads(down["metadata"]["annotations"][api.STASH_ANNOTATION])
    assert stash["spec"]["maxReplicas"] == 5
    assert down["metadata"]["labels"] == {"app": "web"}
    back = conversion.convert(down, V1)
    assert back == full  # the stash restored, and the annotation is gone


def test_edits_through_the_old_version_win_over_the_stash() -> None:
    conversion = website_conversion()
    down = conversion.convert(v1(maxReplicas=5, tier="paid"), ALPHA)
    down["spec"]["replicas"] = 4
    down["spec"]["image"] = "nginx:2"
    back = conversion.convert(down, V1)
    assert back["spec"] == {"host": "example.com", "image": "nginx:2", "replicas": 4,
                            "maxReplicas": 5, "tier": "paid"}


def test_a_field_removed_in_the_hub_stays_removed() -> None:
    conversion = website_conversion()
    down = conversion.convert(v1(tier="paid"), ALPHA)
    back = conversion.convert(down, V1)
    assert "maxReplicas" not in back["spec"] and back["spec"]["tier"] == "paid"


def test_same_version_is_a_copy_and_unknown_versions_fail() -> None:
    conversion = website_conversion()
    obj = v1()
    same = conversion.convert(obj, V1)
    assert same == obj and same is not obj
    with pytest.raises(api.ConversionError, match=r"no version 'web\.pyctrl\.io/v9'"):
        conversion.convert(obj, "web.pyctrl.io/v9")


def test_registering_a_spoke_of_another_kind_or_twice_is_refused() -> None:
    conversion = website_conversion()
    with pytest.raises(ValueError, match=r"not a version of web\.pyctrl\.io Website"):
        conversion.spoke(Cluster, to_hub=lambda c: Website(spec=None),  # type: ignore[arg-type]
                         from_hub=lambda w: Cluster())
    from tests.unit.api.sample_kinds import (
        WebsiteV1alpha1,
        website_from_v1alpha1,
        website_to_v1alpha1,
    )

    with pytest.raises(ValueError, match="already registered"):
        conversion.spoke(WebsiteV1alpha1, to_hub=website_from_v1alpha1,
                         from_hub=website_to_v1alpha1)


def review(desired: str, *objects: dict[str, Any]) -> dict[str, object]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "r-1", "desiredAPIVersion": desired, "objects": list(objects)}}


def test_conversion_review_success() -> None:
    conversion = website_conversion()
    assert isinstance(conversion, ReviewHandler)
    answer = handle_review(conversion, review(V1, alpha(), alpha()))
    assert answer["apiVersion"] == "apiextensions.k8s.io/v1"
    assert answer["kind"] == "ConversionReview"
    response = answer["response"]
    assert isinstance(response, dict)
    assert response["uid"] == "r-1" and response["result"] == {"status": "Success"}
    assert response["convertedObjects"] == [v1(), v1()]


def test_conversion_review_failure_is_reported_not_raised() -> None:
    answer = website_conversion().handle_review(review("web.pyctrl.io/v9", alpha()))
    response = answer["response"]
    assert isinstance(response, dict)
    assert response["result"]["status"] == "Failure"
    assert "no version" in response["result"]["message"]
    assert "convertedObjects" not in response


@pytest.mark.parametrize("body", [
    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "x"}},
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"},
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
     "request": {"uid": "x", "objects": []}},
])
def test_unreadable_reviews_raise_review_error(body: dict[str, object]) -> None:
    with pytest.raises(ReviewError):
        website_conversion().handle_review(body)


# -- a forged stash (issue 35 item 6): what comes out of it is checked against the hub ------
def _forged(stash: dict[str, Any]) -> dict[str, Any]:
    down = alpha()
    down["metadata"]["annotations"] = {api.STASH_ANNOTATION: orjson.dumps(stash).decode()}
    return down


def _hub_spec(**spec: Any) -> dict[str, Any]:
    return {"spec": {"host": "example.com", "image": "nginx", "replicas": 2, **spec}}


@pytest.mark.parametrize(("spec", "problem"), [
    ({"maxReplicas": -5}, "spec.maxReplicas: must be at least 0"),
    ({"maxReplicas": 101}, "spec.maxReplicas: must be at most 100"),
    ({"maxReplicas": "5"}, "spec.maxReplicas: must be of type integer"),
    ({"maxReplicas": True}, "got `bool` - at `$.spec.maxReplicas`"),
    ({"routes": [{"path": f"/{i}"} for i in range(17)]}, "spec.routes: must have at most 16"),
    ({"routes": [{"path": "/", "port": 0}]}, "spec.routes[0].port: must be at least 1"),
    ({"routes": [{"path": "x"}]}, "spec.routes[0].path: must match '^/'"),
    ({"routes": [{"path": "/"}, {"path": "/"}]}, "spec.routes[1]: duplicate entry"),
    ({"routes": [{"port": 80}]}, "missing required field `path` - at `$.spec.routes[0]`"),
    ({"tier": "gold"}, "Invalid enum value 'gold' - at `$.spec.tier`"),
])
def test_a_stash_past_the_hubs_bounds_fails_the_conversion(spec: dict[str, Any],
                                                            problem: str) -> None:
    with pytest.raises(api.ConversionError,
                       match=re.escape(f"bad {api.STASH_ANNOTATION} annotation: ") + ".*"
                       + re.escape(problem)):
        website_conversion().convert(_forged(_hub_spec(**spec)), V1)


def test_a_stash_that_is_not_an_object_fails_the_conversion() -> None:
    down = alpha()
    down["metadata"]["annotations"] = {api.STASH_ANNOTATION: "[1, 2]"}
    with pytest.raises(api.ConversionError, match="not a JSON object"):
        website_conversion().convert(down, V1)


def test_a_stash_within_the_bounds_is_restored() -> None:
    spec = {"maxReplicas": 0, "tier": "paid",
            "routes": [{"path": f"/{i}", "port": 65535} for i in range(16)]}
    back = website_conversion().convert(_forged(_hub_spec(**spec)), V1)
    assert back["spec"] == {**_hub_spec(**spec)["spec"]}


def test_a_forged_stash_in_a_review_is_a_failure_result() -> None:
    review = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
              "request": {"uid": "u", "desiredAPIVersion": V1,
                          "objects": [_forged(_hub_spec(maxReplicas=-5))]}}
    answer = handle_review(website_conversion(), review)["response"]
    assert isinstance(answer, dict) and answer["result"]["status"] == "Failure"
    assert "spec.maxReplicas: must be at least 0" in answer["result"]["message"]
