"""How the integration suite is spread over pytest-xdist workers (``make test`` runs it so).

Every worker is its own pytest session with its own control planes (the session fixtures in
tests/conftest.py; the chaos suite's package plane), so a test that restarts, compacts or
kills "the" apiserver only touches its worker's. What must not be split is what a module or
package sets up once: under ``--dist loadgroup`` each module is one unit of work (its tests
run in order on one worker, its module fixtures start once), unless a test names its own
``xdist_group`` (``pods``: the tests of the pods-mode control plane share one worker, so one
starts it).

xdist marks a group by appending ``@<group>`` to each node id, through an attribute that
pytest 9.2 no longer reads (``Node.nodeid`` is now built from ``Node._id``); the node ids then
keep no group and ``--dist loadgroup`` hands out single tests, so a module's control plane
started on every worker that ran one of its tests. :func:`_keep_groups` writes the suffix
where this pytest reads it (pytest >= 9.2 only; before, xdist's own suffix works).

Order: the longest units first (:data:`EXPECTED_SECONDS`, measured with 4 workers on the
shared 2-core machine; an unlisted module counts :data:`DEFAULT_SECONDS` per test), so the
suite ends with short ones instead of one worker finishing a three-minute test alone. xdist
hands each worker its first unit and then a second one at once; the second ones are the
cheapest units, so nothing long waits behind a long test. The units in :data:`NOT_FIRST`
(second-scale deadlines in real time) are never a worker's first: ``make test`` runs the
CPU-bound unit tests, mypy and the docs build beside the first wave (a replica starved past
its renew deadline exits), so that wave is installs, builds and minute waits; they come
first among the rest. Without xdist the order and grouping are left as collected.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.dist import Dist, build

#: Rough wall-clock seconds of the heavy units (a module, or a named xdist group): setup and
#: calls in one ``make test`` at load 14-24 (2026-11-27), so about twice a quiet machine's.
EXPECTED_SECONDS: dict[str, float] = {
    "tests/integration/chaos/test_outage_recovery.py": 230,
    "tests/integration/test_make_run.py": 220,
    "tests/integration/chaos/test_failover.py": 195,
    "tests/integration/test_deploy.py": 185,
    "tests/integration/webhook/test_abuse.py": 170,
    "tests/integration/test_typed_install.py": 155,
    "pods": 140,
    "tests/integration/test_sharding_scale.py": 125,  # at make test's 300 CronJobs
    "tests/integration/test_sharding.py": 110,
    "tests/integration/test_fencing.py": 100,
    "tests/integration/test_dist.py": 100,
    "tests/integration/test_scaffold.py": 150,
    "tests/integration/test_tutorial.py": 90,
    "tests/integration/chaos/test_outage_logs.py": 90,
    "tests/integration/chaos/test_disruption.py": 85,
    "tests/integration/chaos/test_429_storm.py": 70,
    "tests/integration/test_container_run.py": 60,
    "tests/integration/test_envtest.py": 55,
    "tests/integration/test_informer.py": 55,
    "tests/integration/webhook/test_admission.py": 45,
    "tests/integration/cronjob/test_problems.py": 40,
    "tests/integration/test_kube_client.py": 30,
    "tests/integration/chaos/test_bad_input.py": 27,
    "tests/integration/cronjob/test_jobtemplate_schema.py": 27,
    "tests/integration/test_leaderelection.py": 20,
}
DEFAULT_SECONDS = 1.0
#: Units whose assertions hold second-scale deadlines in real time (leader and shard Leases,
#: recovery within seconds, answers under attack): never a worker's first unit.
NOT_FIRST = frozenset({
    "tests/integration/chaos/test_outage_recovery.py",
    "tests/integration/chaos/test_failover.py",
    "tests/integration/webhook/test_abuse.py",
    "tests/integration/test_sharding_scale.py",
    "tests/integration/test_sharding.py",
    "tests/integration/test_fencing.py",
})


class _KeepGroups:
    """Appends ``@<unit>`` to the node ids, as xdist's loadgroup scheduler expects, on a pytest
    whose node ids come from ``Node._id`` (see the module docstring). Last, so ``--deselect``
    and ``-m`` see the plain node ids first."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        from _pytest.nodeid import NodeId

        for item in items:
            if "@" not in item.nodeid and list(item.iter_markers("xdist_group")):
                item._id = NodeId.parse(f"{item.nodeid}@{_unit(item)}")


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config, "workerinput", None) and config.getvalue("loadgroup"):
        try:
            import _pytest.nodeid  # noqa: F401  (pytest >= 9.2)
        except ImportError:  # an older pytest: xdist's own suffix takes
            return
        config.pluginmanager.register(_KeepGroups(), "pyctrl-keep-xdist-groups")


def _unit(item: pytest.Item) -> str:
    marks = list(item.iter_markers("xdist_group"))
    if marks:
        return str(marks[0].args[0] if marks[0].args else marks[0].kwargs.get("name"))
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)  # before xdist turns the groups into node id suffixes
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    workerinput = getattr(config, "workerinput", None)  # set on xdist workers only
    if not workerinput:
        return
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        if not item.nodeid.startswith("tests/integration/"):
            return  # a mixed run (unit + integration): leave it alone
        name = _unit(item)
        if not list(item.iter_markers("xdist_group")):
            item.add_marker(pytest.mark.xdist_group(name))
        units.setdefault(name, []).append(item)

    def cost(name: str) -> float:
        return EXPECTED_SECONDS.get(name, DEFAULT_SECONDS * len(units[name]))

    ranked = sorted(units, key=cost, reverse=True)
    workers = int(workerinput.get("workercount", 1))
    # The N longest (but not NOT_FIRST) first, then the N cheapest (each worker's second
    # unit, queued behind its first), then the rest longest first.
    head = [n for n in ranked if n not in NOT_FIRST][:workers]
    rest = [n for n in ranked if n not in head]
    cheap = sorted(rest, key=cost)[:workers]
    order = head + cheap + [n for n in rest if n not in cheap]
    items[:] = [item for name in order for item in units[name]]



@pytest.fixture(scope="session")
def built_dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """``make dist``'s sdist and wheel, built once per session (tests/integration/dist.py)."""
    return build(Path(tmp_path_factory.mktemp("dist")))
