"""The one label/field selector parser (pyctrl.kube.selectors), also pyctrl.cache's."""

from __future__ import annotations

from typing import Any

import pytest

from pyctrl import cache
from pyctrl.kube.selectors import LabelSelector, parse_field_selector, parse_label_selector


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ("", {}, True),
    ("app=web", {"app": "web"}, True),
    ("app==web", {"app": "db"}, False),
    ("app!=web", {}, True),
    ("app!=web", {"app": "web"}, False),
    ("app in (web, db),env", {"app": "db", "env": "x"}, True),
    ("e in (x,y)", {"e": "z"}, False),
    ("app notin (web)", {"app": "web"}, False),
    ("e notin (x,y)", {}, True),
    ("!env", {"env": "x"}, False),
    ("env", {}, False),
    ("!f,g", {"g": ""}, True),
    ("a=b,c!=d,e in (x,y),!f,g", {"a": "b", "e": "x", "g": "1", "c": "q"}, True),
    ("a=b,c!=d,e in (x,y),!f,g", {"a": "b", "e": "x"}, False),
    ("app.kubernetes.io/name=web", {"app.kubernetes.io/name": "web"}, True),
    (" app = web , tier ", {"app": "web", "tier": "x"}, True),
])
def test_label_selectors(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(selector).matches(labels) is expected


@pytest.mark.parametrize("bad", [
    "app in web", "a b", "!a in (x)", "=x", "=b", "a=b=c", "e in (x", "e in x)", "in (x)",
    "a in ()", "a=b,", "-a=b", "ain (x)",
])
def test_bad_label_selectors(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_label_selector(bad)


def test_dicts_none_and_parsed_selectors() -> None:
    by_dict = parse_label_selector({"b": "2", "a": "1"})
    assert by_dict == parse_label_selector("a=1,b=2")
    assert by_dict.matches({"a": "1", "b": "2"}) and not by_dict.matches({"a": "1"})
    assert parse_label_selector(by_dict) is by_dict
    assert parse_label_selector(None).empty() and parse_label_selector("  ").empty()
    assert not by_dict.empty()
    assert parse_label_selector(None).matches(None)


def test_matches_object_reads_metadata_labels() -> None:
    sel = parse_label_selector("app=web")
    assert sel.matches_object({"metadata": {"labels": {"app": "web"}}})
    assert not sel.matches_object({"metadata": {}})
    assert not sel.matches_object({})


def test_the_cache_uses_the_same_parser() -> None:
    assert cache.parse_selector is parse_label_selector
    assert cache.Selector is LabelSelector


def test_field_selectors() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "a", "namespace": "n"},
                           "status": {"phase": "Running"}, "spec": {"suspend": True}}
    assert parse_field_selector("metadata.name=a,status.phase!=Failed").matches(obj)
    assert not parse_field_selector("metadata.namespace==other").matches(obj)
    assert parse_field_selector("spec.suspend=true,spec.missing=").matches(obj)
    assert parse_field_selector(None).matches(obj) and parse_field_selector("").matches(obj)
    with pytest.raises(ValueError):
        parse_field_selector("nonsense")
