"""Fuzz: AdmissionReview bodies, from raw bytes to the CronJob webhooks' answers.

The decode path is the webhook server's: ``orjson.loads`` of the body, a JSON object
required, then :func:`pyctrl.webhook.handle_review` with the CronJob ``validate`` and
``mutate`` handlers, then ``orjson.dumps`` of the answer. For any body it either answers
(an AdmissionReview echoing the uid, allowed or denied, a base64 JSON Patch if any) or fails
with ``orjson.JSONDecodeError``/:class:`ReviewError` (the server's clean 400); anything else
would be a 500. Inputs: arbitrary bytes, arbitrary JSON, envelopes with hostile requests,
and valid CronJobs with any subtree replaced by arbitrary JSON (types the schema forbids).
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import orjson
from hypothesis import example, given
from hypothesis import strategies as st

from cronjob_controller.webhook import mutate, validate
from pyctrl.webhook import Handler, ReviewError, handle_review

HANDLERS: list[Handler] = [validate, mutate]
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1),
                      st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=20,
)
BASE: dict[str, Any] = {
    "apiVersion": "batch.pyctrl.io/v1", "kind": "CronJob",
    "metadata": {"name": "fuzz", "namespace": "ns", "labels": {"a": "b"}},
    "spec": {"schedule": "*/5 * * * *", "timeZone": "Europe/Berlin",
             "startingDeadlineSeconds": 30, "concurrencyPolicy": "Forbid",
             "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
             "jobTemplate": {"metadata": {"labels": {"app": "x"}}, "spec": {
                 "backoffLimit": 2, "template": {"spec": {
                     "restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "busybox",
                                     "args": ["echo", "hi"]}]}}}}},
}


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*prefix, i))
    return out


PATHS = _paths(BASE)


def _replace(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(obj)
    node = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def _envelope(request: Any) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def _serve(handler: Handler, body: bytes) -> dict[str, Any] | None:
    """The server's decode path; None for a clean 400."""
    try:
        review = orjson.loads(body)
        if not isinstance(review, dict):
            raise ReviewError("the body is not a JSON object")
        answer = orjson.dumps(handle_review(handler, review))
    except (orjson.JSONDecodeError, ReviewError):
        return None
    decoded: dict[str, Any] = orjson.loads(answer)
    return decoded


def _check_answer(answer: dict[str, Any] | None, uid: object) -> None:
    if answer is None:
        return
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == uid
    assert isinstance(response["allowed"], bool)
    if "patch" in response:
        assert response["patchType"] == "JSONPatch"
        assert isinstance(orjson.loads(base64.b64decode(response["patch"])), list)
    if not response["allowed"]:
        assert response["status"]["code"] in (400, 403, 422)


@given(st.binary(max_size=200))
@example(b"[" * 5000 + b"]" * 5000)
@example(b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":' * 300)
@example(b"\xff\xfe{}")
@example(b'{"a": 1e999}')
@example(b"18446744073709551616")
def test_any_bytes_are_answered_or_a_clean_400(body: bytes) -> None:
    for handler in HANDLERS:
        _serve(handler, body)  # raising anything but a clean 400 fails


@given(json_value)
def test_any_json_is_answered_or_a_clean_400(value: Any) -> None:
    body = orjson.dumps(value)
    for handler in HANDLERS:
        _serve(handler, body)


@given(st.dictionaries(st.sampled_from(["uid", "operation", "object", "oldObject", "kind",
                                        "name", "namespace", "userInfo"]),
                       json_value, max_size=6))
@example({"uid": "u", "operation": "UPDATE", "object": BASE, "oldObject": []})
@example({"uid": "u", "operation": "CREATE", "object": {"spec": None}})
def test_hostile_requests_in_a_valid_envelope(request: dict[str, Any]) -> None:
    body = orjson.dumps(_envelope(request))
    uid = request.get("uid")
    for handler in HANDLERS:
        _check_answer(_serve(handler, body), uid)


@given(st.sampled_from(PATHS), json_value, st.sampled_from(["CREATE", "UPDATE"]),
       st.booleans())
@example(("spec", "schedule"), 5, "CREATE", False)
@example(("spec", "jobTemplate"), [], "CREATE", False)
@example(("spec", "timeZone"), "../../etc/passwd", "CREATE", False)
@example(("spec", "timeZone"), "\x00", "CREATE", False)
@example(("metadata",), "x", "UPDATE", True)
@example(("spec", "startingDeadlineSeconds"), 2**64 - 1, "CREATE", False)
@example(("spec", "startingDeadlineSeconds"), 1e300, "CREATE", False)
def test_a_cronjob_with_any_subtree_replaced_is_answered(
    path: tuple[Any, ...], value: Any, operation: str, with_old: bool
) -> None:
    obj = _replace(BASE, path, value)
    request: dict[str, Any] = {"uid": "u-1", "operation": operation, "object": obj}
    if with_old:
        request["oldObject"] = _replace(BASE, path[:1], value)
    body = orjson.dumps(_envelope(request))
    for handler in HANDLERS:
        answer = _serve(handler, body)
        assert answer is not None  # the envelope is fine: only the object is hostile
        _check_answer(answer, "u-1")
