"""Issue 24 item 4: each concept exists once (times, durations, identities, ownership,
backoffs, Lease records), under one name: the names of earlier drafts are gone and nothing in
pyctrl or the CronJob operator raises a DeprecationWarning (issue 33: nothing was released)."""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

import pyctrl
import pyctrl.api
import pyctrl.kube.meta
import pyctrl.kube.resource as resource_module
import pyctrl.models
from cronjob_controller import api, dialect, jobs
from pyctrl.cache import ExponentialBackoffManager
from pyctrl.conditions import set_status_condition
from pyctrl.duration import parse_duration, parse_go_duration
from pyctrl.kube import LEASES, Resource, format_micro_time, format_time, parse_micro_time
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


ROOT = Path(__file__).resolve().parents[3]
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


# -- issue 36: one place each, checked on the source of pyctrl and the CronJob operator ------
# Each check scans pyctrl/ and cronjob_controller/; a case another branch of issue 36 removes
# is a strict xfail of its own (its reason names the file), to flip once that branch merged.

SCANNED = ("pyctrl", "cronjob_controller")
GENERATED = ROOT / "pyctrl" / "models"  # upstream's own types (JobCondition, PodDNSConfig, ...)


@functools.cache
def _trees() -> list[tuple[str, ast.Module]]:
    """Every scanned module's tree, parsed once for all the checks (read-only)."""
    return [(str(path.relative_to(ROOT)), ast.parse(path.read_text()))
            for package in SCANNED for path in sorted((ROOT / package).rglob("*.py"))
            if not path.is_relative_to(GENERATED)]


@functools.cache
def _found(finder: Callable[[ast.Module], list[tuple[int, str]]]) -> list[tuple[str, int, str]]:
    """What ``finder`` finds in every scanned module (computed once per finder)."""
    return [(path, line, what) for path, tree in _trees() for line, what in finder(tree)]


def _cases(known: dict[str, str]) -> list[object]:
    """One case for everything but ``known``, and a strict xfail per known file."""
    return [pytest.param("", id="all"), *(
        pytest.param(path, id=path, marks=pytest.mark.xfail(strict=True, reason=reason))
        for path, reason in known.items())]


def _select(found: list[tuple[str, int, str]], known: dict[str, str],
            case: str) -> list[str]:
    return [f"{path}:{line} {what}" for path, line, what in found
            if (path == case if case else path not in known)]


def _function_defs(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _is_const(node: ast.AST, value: object) -> bool:
    return isinstance(node, ast.Constant) and node.value == value


def _reads_metadata(node: ast.expr) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "get":
        return bool(node.args) and _is_const(node.args[0], "metadata")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "cast":
        return len(node.args) == 2 and _reads_metadata(node.args[1])
    if isinstance(node, ast.BoolOp):
        return _reads_metadata(node.values[0])
    if isinstance(node, ast.IfExp):
        return _reads_metadata(node.body)
    return (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
            and node.slice.value == "metadata")


def metadata_accessors(tree: ast.Module) -> list[tuple[int, str]]:
    """Functions that hand out an object's metadata mapping (``return obj.get("metadata")``
    and its spellings: ``or {}``, ``cast``, a conditional, a name bound to it first)."""
    found = []
    for fn in _function_defs(tree):
        bound = {target.id for node in ast.walk(fn) if isinstance(node, ast.Assign)
                 and _reads_metadata(node.value)
                 for target in node.targets if isinstance(target, ast.Name)}
        for node in ast.walk(fn):
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value.body if isinstance(node.value, ast.IfExp) else node.value
                if _reads_metadata(value) or (isinstance(value, ast.Name) and value.id in bound):
                    found.append((fn.lineno, fn.name))
                    break
    return found


METADATA_KNOWN: dict[str, str] = {}
# pyctrl.testing's fake creates the metadata of the objects it stores: a writer, not a reader.
METADATA_WRITERS = {("pyctrl/testing/fake_objects.py", "meta_of")}


def test_the_metadata_finder_sees_every_spelling() -> None:
    def found(source: str) -> list[tuple[int, str]]:
        return metadata_accessors(ast.parse(source))

    assert found("def m(o):\n    return o.get('metadata') or {}") == [(1, "m")]
    assert found("def m(o):\n    return cast(M, o.get('metadata') or {})") == [(1, "m")]
    assert found("def m(o):\n    md = o.get('metadata')\n    return md if md else {}") == [
        (1, "m")]
    assert found("def m(o):\n    return o['metadata']") == [(1, "m")]
    assert found("def n(o):\n    return o.get('metadata', {}).get('name')") == []


@pytest.mark.parametrize("case", _cases(METADATA_KNOWN))
def test_one_object_metadata_accessor(case: str) -> None:
    """:mod:`pyctrl.kube.meta` is the one reader of an object's metadata: no module keeps a
    private ``_meta(obj)`` beside it."""
    found = [(path, line, name) for path, line, name in _found(metadata_accessors)
             if path != "pyctrl/kube/meta.py" and (path, name) not in METADATA_WRITERS]
    assert _select(found, METADATA_KNOWN, case) == []


def api_version_parses(tree: ast.Module) -> list[tuple[int, str]]:
    """Splits of an apiVersion at "/" (``.partition("/")``, ``.split("/")``, ``"/" in``)."""
    def names_api_version(node: ast.expr) -> bool:
        text = ast.unparse(node).lower()
        return "apiversion" in text or "api_version" in text

    def splits(node: ast.AST) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("partition", "rpartition", "split", "rsplit")
                and bool(node.args) and _is_const(node.args[0], "/")
                and names_api_version(node.func.value))

    def tests_for_slash(node: ast.AST) -> bool:
        return (isinstance(node, ast.Compare) and _is_const(node.left, "/")
                and isinstance(node.ops[0], ast.In | ast.NotIn)
                and names_api_version(node.comparators[0]))

    return [(node.lineno, ast.unparse(node)) for node in ast.walk(tree)
            if isinstance(node, ast.expr) and (splits(node) or tests_for_slash(node))]


API_VERSION_KNOWN: dict[str, str] = {}


def test_the_api_version_finder_sees_every_spelling() -> None:
    def found(source: str) -> int:
        return len(api_version_parses(ast.parse(source)))

    assert found("g = api_version.rpartition('/')[0]") == 1
    assert found("g = str(ref.get('apiVersion', '')).partition('/')[0]") == 1
    assert found("x = obj['apiVersion'].split('/')") == 1
    assert found("ok = '/' in api_version") == 1
    assert found("parts = path.split('/')") == 0


@pytest.mark.parametrize("case", _cases(API_VERSION_KNOWN))
def test_one_api_version_parser(case: str) -> None:
    """:func:`pyctrl.kube.meta.group_version` (and ``api_group``) is the one apiVersion
    parser."""
    found = [f for f in _found(api_version_parses) if f[0] != "pyctrl/kube/meta.py"]
    assert _select(found, API_VERSION_KNOWN, case) == []
    assert pyctrl.kube.meta.group_version("batch/v1") == ("batch", "v1")
    assert pyctrl.kube.meta.group_version("v1") == ("", "v1")
    assert pyctrl.kube.meta.api_group("apps/v1") == "apps" and pyctrl.kube.meta.api_group(3) == ""


_TIME_CALLS = ("fromisoformat", "strptime", "strftime", "isoformat")
_TIME_DEFS = ("parse_time", "parse_micro_time", "format_time", "format_micro_time")


def time_codecs(tree: ast.Module) -> list[tuple[int, str]]:
    """Hand-written time parsing or formatting, and functions named like the meta ones."""
    found = [(node.lineno, ast.unparse(node)) for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr in _TIME_CALLS]
    found += [(fn.lineno, fn.name) for fn in _function_defs(tree)
              if fn.name.lstrip("_") in _TIME_DEFS]
    return found


TIME_KNOWN: dict[str, str] = {}


@pytest.mark.parametrize("case", _cases(TIME_KNOWN))
def test_one_metav1_time_parser_and_formatter(case: str) -> None:
    """:func:`pyctrl.kube.parse_micro_time`, ``format_time`` and ``format_micro_time`` are
    the only metav1 time codecs (two parsers disagreed on a time without an offset)."""
    found = [f for f in _found(time_codecs) if f[0] != "pyctrl/kube/meta.py"]
    assert _select(found, TIME_KNOWN, case) == []
    assert parse_micro_time("2024-01-02T03:04:05") == WHEN.replace(microsecond=0)


def conditions(tree: ast.Module) -> list[tuple[int, str]]:
    """Condition models (a class named ``Condition`` or with a ``last_transition_time``
    field) and condition helpers (``set_/find_/remove_/get_...condition``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            fields = {s.target.id for s in node.body
                      if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
            if node.name == "Condition" or "last_transition_time" in fields:
                found.append((node.lineno, f"class {node.name}"))
    found += [(fn.lineno, fn.name) for fn in _function_defs(tree)
              if fn.name.lstrip("_").split("_")[0] in ("set", "find", "remove", "get")
              and fn.name.endswith("condition")]
    return found


CONDITION_KNOWN: dict[str, str] = {}


@pytest.mark.parametrize("case", _cases(CONDITION_KNOWN))
def test_one_condition_model_and_one_set_of_helpers(case: str) -> None:
    """:class:`pyctrl.api.Condition` is the one Condition model (the generated models keep
    upstream's per-kind ones) and :mod:`pyctrl.conditions` the one set of helpers."""
    allowed = {"pyctrl/api/types.py", "pyctrl/conditions.py"}
    found = [f for f in _found(conditions) if f[0] not in allowed]
    assert _select(found, CONDITION_KNOWN, case) == []


# The loaded connection to an API server (client-go's rest.Config), not settings a user
# fills in: named after the kubeconfig it comes from, as controller-runtime keeps rest.Config.
NOT_SETTINGS = {"KubeConfig", "ConnectionSettings"}


def test_settings_classes_are_named_options() -> None:
    """One suffix for settings (controller-runtime's): ``*Options``, one class per concept
    (the Manager's and the elector's leader election are one ``LeaderElectionOptions``)."""
    suffixes = ("Config", "Configuration", "Settings", "Conf", "Opts", "Params", "Parameters")
    found = [f"{path}:{node.lineno} {node.name}" for path, tree in _trees()
             for node in ast.walk(tree)
             if isinstance(node, ast.ClassDef) and node.name.endswith(suffixes)
             and node.name not in NOT_SETTINGS]
    found += [f"examples: {name}" for path in sorted((ROOT / "examples").rglob("*.py"))
              for node in ast.walk(ast.parse(path.read_text()))
              if isinstance(node, ast.ClassDef) and (name := node.name).endswith(suffixes)]
    assert found == []
    options = [name for name in pyctrl.__all__ if name.endswith("Options")]
    stems = [name.removesuffix("Options") for name in options]
    assert len(set(stems)) == len(stems) and "LeaderElectionOptions" in options


def _const(node: ast.AST) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _builtin_constants() -> dict[str, Resource]:
    return {name: value for name, value in vars(resource_module).items()
            if isinstance(value, Resource)}


def test_resource_constants_are_defined_in_one_table() -> None:
    """The built-in kinds' Resource constants are defined in :mod:`pyctrl.kube.resource`
    only; ``pyctrl.kube`` and ``pyctrl`` re-export its ``__all__`` (no second listing)."""
    table = _builtin_constants()
    assert sorted(resource_module.__all__) == sorted([*table, "Resource"])
    by_identity = {(r.group, r.version, r.plural) for r in table.values()}
    found = []
    for path, tree in _trees():
        if path == "pyctrl/kube/resource.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id in table for t in node.targets):
                found.append(f"{path}:{node.lineno} {ast.unparse(node.targets[0])} =")
            if (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("Resource")
                    and tuple(_const(a) for a in node.args[:3]) in by_identity):
                found.append(f"{path}:{node.lineno} {ast.unparse(node)}")
            if path in ("pyctrl/__init__.py", "pyctrl/kube/__init__.py"):
                named = node.name if isinstance(node, ast.alias) else _const(node)
                if named in table:
                    found.append(f"{path}: lists {named}")
    assert found == []
    for name, value in table.items():
        assert getattr(pyctrl, name) is value and getattr(pyctrl.kube, name) is value
        assert name in pyctrl.__all__ and name in pyctrl.kube.__all__


def test_the_models_agree_with_the_resource_table() -> None:
    """A built-in kind with a typed model and a constant: both name the same Resource."""
    by_kind = {(r.group, r.kind): r for r in _builtin_constants().values()}
    checked = 0
    for module in pkgutil.iter_modules(pyctrl.models.__path__):
        models = importlib.import_module(f"pyctrl.models.{module.name}")
        for cls in vars(models).values():
            info = getattr(cls, "__kind__", None)
            if isinstance(cls, type) and info is not None and (info.group, info.kind) in by_kind:
                assert pyctrl.api.resource_for(cls) == by_kind[info.group, info.kind], cls
                checked += 1
    assert checked >= 20


def same_field_classes(tree: ast.Module) -> list[tuple[int, str]]:
    """Classes of one module that declare the same (three or more) fields, annotations and
    all; TypedDicts (a call's keywords for a type checker) aside."""
    seen: dict[frozenset[tuple[str, str]], str] = {}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef) or any(
                ast.unparse(base).endswith("TypedDict") for base in node.bases):
            continue
        fields = frozenset((ast.unparse(s.target), ast.unparse(s.annotation))
                           for s in node.body if isinstance(s, ast.AnnAssign))
        if len(fields) >= 3:
            if fields in seen:
                found.append((node.lineno, f"{node.name} repeats {seen[fields]}"))
            seen.setdefault(fields, node.name)
    return found


def test_no_class_repeats_another_ones_fields() -> None:
    """A set of fields is declared once (the work queue's seven metrics were declared
    twice, for the families and for one queue's children)."""
    assert same_field_classes(ast.parse(
        "class A:\n    a: int\n    b: int\n    c: str\nclass B:\n    a: int\n    b: int\n"
        "    c: str")) == [(5, "B repeats A")]
    found = [f"{path}:{line} {what}" for path, tree in _trees()
             for line, what in same_field_classes(tree)]
    assert found == []


def test_the_api_server_restart_is_defined_once() -> None:
    """Issue 41 item 6: the outage gate and the Reflector read one restart definition (the
    backoff while connections are refused, the startup window of 401/403), not two copies of
    the same numbers with their own exception lists."""
    import inspect

    from pyctrl import availability
    from pyctrl.availability import RESTART_BACKOFF, STARTUP_WINDOW, OutageGate
    from pyctrl.cache import reflector, retries  # the Reflector's backoffs live in retries

    defaults = {n: p.default for n, p in inspect.signature(OutageGate).parameters.items()}
    assert (defaults["initial"], defaults["maximum"], defaults["startup_window"]) == (
        *RESTART_BACKOFF, STARTUP_WINDOW)
    assert "Retries(" in inspect.getsource(reflector)
    source = inspect.getsource(retries) + inspect.getsource(reflector)
    assert all(name in source for name in ("RESTART_BACKOFF", "StartupWindow", "is_refused",
                                           "is_unavailable"))
    assert "0.25" not in source and "_STARTUP_WINDOW" not in source
    assert availability.is_refused(ConnectionRefusedError())


def test_one_manager_class() -> None:
    """Issue 41 item 6: ``pyctrl.Manager`` is one class (it was ``pyctrl.app.Manager``, a
    subclass of ``pyctrl.manager.Manager`` with the Builder, under one name)."""
    import pyctrl.manager

    assert pyctrl.Manager is pyctrl.manager.Manager
    assert pyctrl.Manager.__mro__ == (pyctrl.Manager, object)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("pyctrl.app")
    manager = pyctrl.Manager(FakeClient(FakeClock()))
    assert isinstance(manager.controller("x"), pyctrl.Builder)
