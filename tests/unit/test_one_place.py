"""Issue 24 item 4: each concept exists once (times, durations, identities, ownership,
backoffs, Lease records), under one name: the names of earlier drafts are gone and nothing in
pyctrl or the CronJob operator raises a DeprecationWarning (issue 33: nothing was released)."""

from __future__ import annotations

import ast
import importlib
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

import pyctrl
from cronjob_controller import api, dialect, jobs
from pyctrl.cache import ExponentialBackoffManager
from pyctrl.conditions import set_status_condition
from pyctrl.duration import parse_duration, parse_go_duration
from pyctrl.kube import LEASES, format_micro_time, format_time, parse_micro_time
from pyctrl.leaderelection import LeaderElectionRecord, LeaseLock, default_identity
from pyctrl.testing import FakeClient, FakeClock

WHEN = datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def test_metav1_times_are_formatted_in_one_place() -> None:
    assert format_time(WHEN) == "2024-01-02T03:04:05Z"
    assert format_micro_time(WHEN) == "2024-01-02T03:04:05.678901Z"
    plus2 = WHEN.astimezone(timezone(timedelta(hours=2)))
    assert format_time(plus2) == "2024-01-02T03:04:05Z", "any zone is written in UTC"
    assert format_micro_time(WHEN.replace(microsecond=0)) == "2024-01-02T03:04:05.000000Z"
    assert parse_micro_time(format_micro_time(WHEN)) == WHEN
    assert parse_micro_time("garbage") is None and parse_micro_time(None) is None
    assert not hasattr(api, "format_time"), "one metav1.Time writer: pyctrl.kube.format_time"
    assert not hasattr(importlib.import_module("cronjob_controller.constants"), "format_time")
    (ready,) = set_status_condition([], "Ready", "True", "Ok", clock=FakeClock(plus2))
    assert pyctrl.api.encode(ready)["lastTransitionTime"] == "2024-01-02T03:04:05Z"


def test_one_go_duration_parser() -> None:
    assert parse_go_duration("1h30m") == dialect.parse_go_duration("1h30m") == 5400 * 10**9
    assert parse_duration("1.5h") == 5400.0
    for bad, message in (("1m30", "missing unit"), ("1d", "unknown unit"),
                         ("99999999999999999999h", "too large")):
        with pytest.raises(ValueError, match=message):
            parse_go_duration(bad)
        with pytest.raises(dialect.ScheduleError, match=message):
            dialect.parse_go_duration(bad)
        with pytest.raises(ValueError, match="invalid duration"):
            parse_duration(bad)
    with pytest.raises(ValueError):
        parse_duration("\u0661s")  # an Arabic-Indic digit: Go reads ASCII digits only


def test_one_leader_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAME", "cronjob-7d9f-abcde")
    a, b = default_identity(), default_identity()
    assert a.startswith("cronjob-7d9f-abcde_") and a != b
    monkeypatch.delenv("POD_NAME")
    assert default_identity().rpartition("_")[0]  # the host name
    import pyctrl.manager

    assert not hasattr(pyctrl.manager, "default_identity")


def test_one_is_controlled_by_for_objects_and_uids() -> None:
    owner = {"metadata": {"name": "cj", "uid": "u1"}}
    child = {"metadata": {"ownerReferences": [
        {"apiVersion": "v1", "kind": "X", "name": "cj", "uid": "u1", "controller": True}]}}
    assert pyctrl.is_controlled_by(child, owner) and pyctrl.is_controlled_by(child, "u1")
    assert not pyctrl.is_controlled_by(child, "u2")
    assert not pyctrl.is_controlled_by(child, "") and not pyctrl.is_controlled_by(
        child, {"metadata": {}})
    assert not hasattr(jobs, "is_controlled_by")


def test_one_backoff_name_each() -> None:
    assert pyctrl.Backoff is pyctrl.retry.Backoff  # the retry settings keep the name
    from pyctrl.cache import backoff

    assert backoff.ExponentialBackoffManager is ExponentialBackoffManager
    assert not hasattr(pyctrl.cache, "Backoff") and not hasattr(backoff, "Backoff")
    lease_lock = importlib.import_module("pyctrl.leaderelection.lease_lock")
    assert not hasattr(lease_lock, "format_micro_time")
    assert not hasattr(lease_lock, "parse_micro_time")


ROOT = Path(__file__).resolve().parents[2]
_DEPRECATED_FROM = ("warnings", "typing_extensions")


def deprecations(source: str) -> list[int]:
    """Lines of ``source`` that name DeprecationWarning (or PendingDeprecationWarning) or use
    ``warnings.deprecated`` (PEP 702; also ``typing_extensions``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name | ast.Attribute):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name in ("DeprecationWarning", "PendingDeprecationWarning"):
                found.append(node.lineno)
        if (isinstance(node, ast.ImportFrom) and node.module in _DEPRECATED_FROM
                and any(a.name == "deprecated" for a in node.names)) or (
                isinstance(node, ast.Attribute) and node.attr == "deprecated"
                and isinstance(node.value, ast.Name) and node.value.id in _DEPRECATED_FROM):
            found.append(node.lineno)
    return sorted(set(found))


def test_the_finder_sees_every_form() -> None:
    assert deprecations("import warnings\nwarnings.warn('x', DeprecationWarning)") == [2]
    assert deprecations("import warnings as w\nw.warn('x', category=w.DeprecationWarning)") == [2]
    assert deprecations("from warnings import deprecated\n@deprecated('x')\ndef f(): pass") == [1]
    assert deprecations("raise PendingDeprecationWarning") == [1]
    assert deprecations("import warnings\n@warnings.deprecated('x')\ndef f(): pass") == [2]
    assert deprecations("import warnings\nwarnings.warn('x', UserWarning)") == []
    assert deprecations("out['deprecated'] = info.deprecated\nf(deprecated=deprecated)") == []


@pytest.mark.parametrize("package", ["pyctrl", "cronjob_controller"])
def test_nothing_raises_a_deprecation_warning(package: str) -> None:
    """No deprecation path: nothing was released, so an old spelling is removed, not aliased."""
    hits = [f"{path.relative_to(ROOT)}:{line}"
            for path in sorted((ROOT / package).rglob("*.py"))
            for line in deprecations(path.read_text())]
    assert hits == []


def test_lease_lock_creates_its_lease_with_labels() -> None:
    client = FakeClient()
    lock = LeaseLock(client, "ns", "l", "me", labels={"a": "b"})
    lock.create(LeaderElectionRecord("me", 15, WHEN, WHEN, 0))
    lease = client.get_object(LEASES, "l", "ns")
    assert lease["metadata"]["labels"] == {"a": "b"}
    assert lease["spec"]["renewTime"] == format_micro_time(WHEN)
    assert lock.get().renew_time == WHEN
    LeaseLock(client, "ns", "plain", "me").create(LeaderElectionRecord("me", 15, None, None, 0))
    assert "labels" not in client.get_object(LEASES, "plain", "ns")["metadata"]
