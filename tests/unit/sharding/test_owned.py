"""Owned objects follow their owner's shard: stamped at create, handed over, adopted.

The proof of the ordering: an owner with an active owned Job moves mid-tick (its next run is
due) from shard a to shard b while b's Job cache lags; b must not run a Forbid-style sync
(which would start a second Job) until its cache holds the active Job. The sharder's pass,
both shards' ShardReconcilers and a Forbid-like inner reconciler run against one FakeClient;
each shard's Job cache is a snapshot the test refreshes, so the lag is explicit. Every test
runs twice: with the caches handing out raw dicts, and typed objects (``pyctrl.models``'
ConfigMap and batch/v1 Job), as a controller declared with kind classes reads them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from pyctrl import api
from pyctrl.cache import CONTROLLER_UID_INDEX
from pyctrl.errors import Conflict, NotFound
from pyctrl.kube import CONFIGMAPS, JOBS, meta
from pyctrl.models.batch_v1 import Job
from pyctrl.models.core_v1 import ConfigMap
from pyctrl.reconcile import Request, Result
from pyctrl.sharding import HashRing, Sharder, ShardingOptions, ShardReconciler
from pyctrl.sharding.owned import CreateRecord, StampingClient, add_to_handover
from pyctrl.testing import Action, FakeClient, FakeClock
from tests.unit.sharding.helpers import NS, SHARD, configmap, lease, options

HANDOVER = "handover.sharding.pyctrl.io/mirror"


def _opts(shard: str) -> ShardingOptions:
    return options(shard, owned=(JOBS,))


def _name_on(shard: str, ring: HashRing) -> str:
    return next(f"cm-{i}" for i in range(100) if ring.shard_for(f"{NS}/cm-{i}") == shard)


@pytest.fixture(autouse=True, params=["raw", "typed"])
def _cached_form(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The form the shard caches hand out: dicts, or typed objects."""
    monkeypatch.setattr(_OwnerCache, "typed", request.param == "typed")


class _OwnerCache:
    """A shard's label-filtered owner cache, always current (the worst case is a current
    owner cache next to a lagging Job cache)."""

    typed = False

    def __init__(self, client: FakeClient, shard: str) -> None:
        self._client, self._shard = client, shard

    def get(self, namespace: str | None, name: str) -> meta.AnyObject:
        obj = self._client.get_object(CONFIGMAPS, name, namespace)
        if (obj["metadata"].get("labels") or {}).get(SHARD) != self._shard:
            raise NotFound("not in this shard's cache", 404, "NotFound")
        return api.decode(ConfigMap, obj) if self.typed else obj


class _JobCache:
    """A shard's label-filtered Job cache, as of the last :meth:`refresh`."""

    def __init__(self, client: FakeClient, shard: str) -> None:
        self._client, self._shard = client, shard
        self.jobs: dict[str, dict[str, Any]] = {}

    def refresh(self) -> None:
        self.jobs = {j["metadata"]["name"]: j for j in self._client.list_objects(JOBS, NS)
                     if (j["metadata"].get("labels") or {}).get(SHARD) == self._shard}

    def get(self, namespace: str | None, name: str) -> meta.AnyObject:
        if name not in self.jobs:
            raise NotFound("not cached", 404, "NotFound")
        return self._form(self.jobs[name])

    def by_index(self, index: str, value: str) -> Sequence[meta.AnyObject]:
        assert index == CONTROLLER_UID_INDEX
        return [self._form(j) for j in self.active_and_done(value)]

    def active_and_done(self, uid: str) -> list[dict[str, Any]]:
        """The cached Jobs (raw: the test's ``status.done`` is no Job field) of owner uid."""
        return [j for j in self.jobs.values()
                if any(r.get("uid") == uid for r in j["metadata"].get("ownerReferences", ()))]

    @staticmethod
    def _form(job: dict[str, Any]) -> meta.AnyObject:
        return api.decode(Job, job) if _OwnerCache.typed else job


class _Forbid:
    """Starts the next run of an owner unless its Job cache shows an active Job."""

    def __init__(self, client: StampingClient, owners: _OwnerCache, jobs: _JobCache) -> None:
        self._client, self._owners, self._jobs = client, owners, jobs
        self.runs = 0

    def reconcile(self, request: Request) -> Result | None:
        try:
            owner = self._owners.get(request.namespace, request.name)
        except NotFound:
            return None
        uid = meta.uid(owner)
        if any(not j.get("status", {}).get("done") for j in self._jobs.active_and_done(uid)):
            return None  # Forbid: a run is still active
        self.runs += 1
        self._client.create(JOBS, {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"{request.name}-{self.runs}-{id(self)}", "namespace": NS,
                         "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                                              "name": request.name, "uid": uid,
                                              "controller": True}]}}, NS)
        return None


class _Shard:
    def __init__(self, client: FakeClient, shard: str, *, owned: bool = True) -> None:
        self.owners = _OwnerCache(client, shard)
        self.jobs = _JobCache(client, shard)
        self.record = CreateRecord()
        o = _opts(shard)
        self.client = StampingClient(client, o, self.record)
        self.inner = _Forbid(self.client, self.owners, self.jobs)
        self.reconciler = ShardReconciler(
            self.inner, self.owners, self.client, o, owned={JOBS: self.jobs} if owned else None,
            record=self.record if owned else None)

    def reconcile(self, name: str) -> Result | None:
        return self.reconciler.reconcile(Request(NS, name))


def _jobs(client: FakeClient) -> dict[str, str | None]:
    return {j["metadata"]["name"]: (j["metadata"].get("labels") or {}).get(SHARD)
            for j in client.list_objects(JOBS, NS)}


def _world(clock: FakeClock, name: str) -> tuple[FakeClient, Sharder]:
    client = FakeClient(clock)
    client.add_object(CONFIGMAPS, configmap(name))
    sharder = Sharder(client, _opts("leader"), clock=clock)
    clock.step(15)  # past the warm-up
    return client, sharder


def _pass(client: FakeClient, sharder: Sharder) -> list[str]:
    return [a.kind for a in sharder.sync(client.list_objects(CONFIGMAPS, NS))]


def test_a_job_is_created_with_its_owners_shard_label_and_noted() -> None:
    client = FakeClient()
    client.add_object(CONFIGMAPS, configmap("x", {SHARD: "a"}))
    a = _Shard(client, "a")
    a.reconcile("x")
    assert list(_jobs(client).values()) == ["a"]
    assert [n for _, n in a.record.take(f"{NS}/x")] == list(_jobs(client))
    # an object not owned by the sharded kind, or a dry run, is left alone
    a.client.create(JOBS, {"metadata": {"name": "free", "namespace": NS}}, NS)
    assert _jobs(client)["free"] is None


def _on_a(*, owned: bool = True) -> tuple[FakeClient, Sharder, _Shard, _Shard, str]:
    """An owner the ring gives to shard b, assigned to shard a while a is the only shard
    (b's Lease is not seen yet): the client, the sharder, shards a and b, the owner's name."""
    name = _name_on("b", HashRing(["a", "b"]))
    client, sharder = _world(FakeClock(), name)
    a, b = _Shard(client, "a", owned=owned), _Shard(client, "b", owned=owned)
    sharder.membership.observe(lease("a", duration=600))
    assert _pass(client, sharder) == ["assign"]
    return client, sharder, a, b, name


def _b_joins(client: FakeClient, sharder: Sharder) -> None:
    """b's Lease is seen: the ring wants b, the sharder asks a to let go."""
    sharder.membership.observe(lease("b", duration=600))
    assert _pass(client, sharder) == ["drain"]


def _moved_mid_tick(*, owned: bool) -> tuple[FakeClient, _Shard, str, str]:
    """Run 1 of an owner starts on shard a (a's Job cache has not seen it yet); b joins, the
    sharder drains the owner, a acknowledges, the sharder assigns it to b. Returns the
    client, shard b, the owner's name and run 1's Job."""
    client, sharder, a, b, name = _on_a(owned=owned)
    a.reconcile(name)
    assert list(_jobs(client).values()) == ["a"]
    _b_joins(client, sharder)
    a.reconcile(name)  # acknowledges (with owned: hands its Job's name over too)
    assert _pass(client, sharder) == ["assign"]
    assert client.get_object(CONFIGMAPS, name, NS)["metadata"]["labels"] == {SHARD: "b"}
    return client, b, name, next(iter(_jobs(client)))


def test_a_moved_owner_with_an_active_job_never_starts_a_second_run_mid_tick() -> None:
    client, b, name, job = _moved_mid_tick(owned=True)
    cm = client.get_object(CONFIGMAPS, name, NS)
    assert json.loads(cm["metadata"]["annotations"][HANDOVER]) == {"jobs.batch": [job]}

    # The next run is due now. b sees the owner; its Job cache does not hold the Job yet.
    assert b.reconcile(name) is not None, "adopting: requeued, not reconciled"
    assert _jobs(client) == {job: "b"}, "b relabelled the active Job for itself"
    assert b.reconcile(name) is not None, "still not cached: still waiting"
    assert b.inner.runs == 0
    b.jobs.refresh()  # b's informer delivers the relabelled Job
    assert b.reconcile(name) is None
    assert b.inner.runs == 0, "Forbid saw the active Job"
    assert _jobs(client) == {job: "b"}
    assert HANDOVER not in (client.get_object(CONFIGMAPS, name, NS)["metadata"]
                            .get("annotations") or {})
    b.reconcile(name)
    assert b.inner.runs == 0 and len(_jobs(client)) == 1


def test_without_the_handover_the_same_move_starts_a_second_run() -> None:
    """The window the handover closes: a new shard whose Job cache lags starts run 2."""
    client, b, name, _ = _moved_mid_tick(owned=False)
    b.reconcile(name)
    assert b.inner.runs == 1 and len(_jobs(client)) == 2


def test_a_dead_shards_jobs_are_handed_over_by_the_sharder() -> None:
    clock = FakeClock()
    name = _name_on("a", HashRing(["a", "b"]))
    client, sharder = _world(clock, name)
    a, b = _Shard(client, "a"), _Shard(client, "b")
    sharder.membership.observe(lease("a", duration=15))
    sharder.membership.observe(lease("b", duration=600))
    assert _pass(client, sharder) == ["assign"]
    a.reconcile(name)
    job = next(iter(_jobs(client)))
    clock.step(16)  # a's Lease expires: its owner moves at once, with a's Jobs listed
    assert _pass(client, sharder) == ["assign"]
    cm = client.get_object(CONFIGMAPS, name, NS)
    assert cm["metadata"]["labels"][SHARD] == "b"
    assert json.loads(cm["metadata"]["annotations"][HANDOVER]) == {"jobs.batch": [job]}
    assert b.reconcile(name) is not None and b.inner.runs == 0
    b.jobs.refresh()
    b.reconcile(name)
    assert b.inner.runs == 0 and _jobs(client) == {job: "b"}


def _unlabelled_job(client: FakeClient, owner: str, name: str, uid: str | None = None, *,
                    done: bool = False) -> None:
    """A Job controlled by ``owner`` and labelled for no shard (made by hand, or before Job
    sharding); ``done``: a finished run, which no Forbid waits for."""
    uid = uid or client.get_object(CONFIGMAPS, owner, NS)["metadata"]["uid"]
    client.add_object(JOBS, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": name, "namespace": NS, "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": uid,
            "controller": True}]}, **({"status": {"done": True}} if done else {})})


def _listed(client: FakeClient, name: str) -> list[str] | None:
    annotations = client.get_object(CONFIGMAPS, name, NS)["metadata"].get("annotations") or {}
    return json.loads(annotations[HANDOVER])["jobs.batch"] if HANDOVER in annotations else None


def _hand_over(client: FakeClient, owner: dict[str, Any], job: str, **kw: Any) -> str:
    """What a command-line helper does after it created ``job`` (unlabelled) for ``owner``."""
    return add_to_handover(client, CONFIGMAPS, owner, [(JOBS, job)],
                           controller="mirror", **kw)


def test_unlabelled_jobs_are_swept_into_their_owners_handover() -> None:
    """Jobs made before Job sharding (or by hand) carry no shard label: the sharder's sweep
    lists them on their owner, assigned or in place, and the owner's shard adopts them."""
    clock = FakeClock()
    client, sharder = _world(clock, "x")
    client.add_object(CONFIGMAPS, configmap("y", {SHARD: "a"}))
    uids = {n: client.get_object(CONFIGMAPS, n, NS)["metadata"]["uid"] for n in ("x", "y")}
    for n in ("x", "y"):
        _unlabelled_job(client, n, f"{n}-old", uids[n])
    sharder.membership.observe(lease("a", duration=600))
    assert sorted(_pass(client, sharder)) == ["assign", "handover"]
    for n in ("x", "y"):
        annotations = client.get_object(CONFIGMAPS, n, NS)["metadata"]["annotations"]
        assert json.loads(annotations[HANDOVER]) == {"jobs.batch": [f"{n}-old"]}
    a = _Shard(client, "a")
    for n in ("x", "y"):
        a.reconcile(n)
    a.jobs.refresh()
    for n in ("x", "y"):
        a.reconcile(n)
    assert _jobs(client) == {"x-old": "a", "y-old": "a"}
    assert a.inner.runs == 0, "the adopted Jobs are active: Forbid starts nothing"
    for n in ("x", "y"):
        assert HANDOVER not in client.get_object(CONFIGMAPS, n, NS)["metadata"]["annotations"]
    assert _pass(client, sharder) == [], "swept once; the next sweep is a resync away"


def test_an_owner_moved_before_its_first_run_carries_no_handover_list() -> None:
    """An owner drained before it ever had a Job (the ring settling as shards start) is
    acknowledged without a handover list: nothing is left on it for good (CI saw an empty
    list, "{}", stay on such an owner: the new shard had nothing to adopt, so it never
    removed it)."""
    client, sharder, a, b, name = _on_a()
    _b_joins(client, sharder)
    a.reconcile(name)  # acknowledges: no Job yet
    assert HANDOVER not in (client.get_object(CONFIGMAPS, name, NS)["metadata"]
                            .get("annotations") or {})
    assert _pass(client, sharder) == ["assign"]
    b.reconcile(name)
    assert b.inner.runs == 1


def test_an_empty_or_unreadable_handover_list_is_removed_at_adoption() -> None:
    """A list with nothing to adopt ("{}" from an older version, or a hand edit that is not
    JSON) is removed by the first reconcile on the owner's shard, which then goes on."""
    clock = FakeClock()
    client, _ = _world(clock, "x")
    for n, value in (("x", "{}"), ("y", "not json [")):
        obj = client.get_object(CONFIGMAPS, n, NS) if n == "x" else client.add_object(
            CONFIGMAPS, configmap(n))
        obj["metadata"]["labels"] = {SHARD: "a"}
        obj["metadata"]["annotations"] = {HANDOVER: value}
        client.update(CONFIGMAPS, obj)
    a = _Shard(client, "a")
    for n in ("x", "y"):
        assert a.reconcile(n) is None
        assert HANDOVER not in client.get_object(CONFIGMAPS, n, NS)["metadata"]["annotations"]
    assert a.inner.runs == 2


def test_a_job_created_outside_any_shard_is_listed_and_adopted_before_the_next_run() -> None:
    """A manual run (a Job created unlabelled by a helper that is no shard) is merged into
    the list already on its owner; the owner's shard adopts it before its next sync, so a
    Forbid policy sees it at once, not a sweep (30 s) later."""
    clock = FakeClock()
    client, _ = _world(clock, "x")
    owner = client.get_object(CONFIGMAPS, "x", NS)
    owner["metadata"]["labels"] = {SHARD: "a"}
    owner["metadata"]["annotations"] = {HANDOVER: json.dumps({"jobs.batch": ["x-old"]})}
    client.update(CONFIGMAPS, owner)
    _unlabelled_job(client, "x", "x-old", done=True)  # still listed from an earlier move
    owner = client.get(CONFIGMAPS, "x", NS)  # the helper's read, before its create
    _unlabelled_job(client, "x", "x-manual")
    client.clear_actions()
    assert _hand_over(client, owner, "x-manual") == "listed"
    assert _listed(client, "x") == ["x-manual", "x-old"]
    assert [a.verb for a in client.actions] == ["patch"]
    assert client.get_object(CONFIGMAPS, "x", NS)["metadata"]["labels"] == {SHARD: "a"}
    assert _hand_over(client, client.get(CONFIGMAPS, "x", NS), "x-manual") == "listed"
    assert [a.verb for a in client.actions] == ["patch", "get"], "listed already: no write"

    a = _Shard(client, "a")
    assert a.reconcile("x") is not None, "adopting: requeued, not reconciled"
    assert _jobs(client) == {"x-manual": "a", "x-old": "a"}
    a.jobs.refresh()
    assert a.reconcile("x") is None
    assert a.inner.runs == 0, "Forbid saw the manual run"
    assert _listed(client, "x") is None


def test_an_unsharded_owner_gets_no_list_and_a_deleted_one_is_reported_gone() -> None:
    clock = FakeClock()
    client, _ = _world(clock, "x")  # not labelled for any shard, no list: not sharded
    _unlabelled_job(client, "x", "x-manual")
    client.clear_actions()
    owner = client.get_object(CONFIGMAPS, "x", NS)
    assert _hand_over(client, owner, "x-manual") == "unsharded"
    assert client.actions == [] and _listed(client, "x") is None
    owner["metadata"]["labels"] = {SHARD: "a"}
    client.delete(CONFIGMAPS, "x", NS)
    assert _hand_over(client, owner, "x-manual") == "gone"


def _racing(client: FakeClient, write: Callable[[], object]) -> None:
    """Run ``write()`` just before the first patch of an owner that comes after this call,
    as another writer would land between a read and the write built from it."""
    raced: list[bool] = []

    def react(action: Action) -> None:
        if not raced:
            raced.append(True)
            write()

    client.prepend_reactor("patch", CONFIGMAPS, react)


@pytest.mark.parametrize("race", ["listed-first", "ack-first", "ack-from-a-stale-cache"])
def test_a_job_listed_while_its_owner_drains_reaches_the_new_shard(race: str) -> None:
    """The drain case: the helper lists its Job while the old shard a acknowledges the
    owner's move to b. Either a's acknowledgement reads a version holding the listing (and
    keeps it), or one of the two writes is refused by the other's (resourceVersion
    precondition) and retried from a newer read; b adopts the Job in every order, and the
    run a started (not in a's Job cache yet) too."""
    client, sharder, a, b, name = _on_a()
    a.reconcile(name)  # run 1 starts on a (a's Job cache has not seen it yet)
    run1 = next(iter(_jobs(client)))
    _b_joins(client, sharder)
    owner = client.get(CONFIGMAPS, name, NS)  # the helper's read: labelled a, draining
    _unlabelled_job(client, name, "manual")
    client.clear_actions()
    if race == "listed-first":
        assert _hand_over(client, owner, "manual") == "listed"
        assert a.reconcile(name) is None  # acknowledges, from a version with the list
    elif race == "ack-first":
        _racing(client, lambda: a.reconcile(name))
        assert _hand_over(client, owner, "manual") == "listed"
        assert [x.verb for x in client.actions] == ["patch", "patch", "get", "patch"], \
            "a's acknowledgement, the helper's refused write, its re-read and its retry"
        assert _listed(client, name) == sorted(["manual", run1]), "merged, not overwritten"
    else:
        stale = ShardReconciler(a.inner, _Fixed(owner), a.client, _opts("a"),
                                owned={JOBS: a.jobs}, record=a.record)
        assert _hand_over(client, owner, "manual") == "listed"
        with pytest.raises(Conflict):
            stale.reconcile(Request(NS, name))  # built from the version before the list
        # retried once a's cache has the newer version; run 1, still only in a's record
        # (not in its cache), is handed over too: the refused acknowledgement kept it
        assert a.reconcile(name) is None
    both = sorted(["manual", run1])
    assert _listed(client, name) == both
    assert (client.get_object(CONFIGMAPS, name, NS)["metadata"].get("labels") or {}) == {}
    assert _pass(client, sharder) == ["assign"]
    assert _listed(client, name) == both
    assert b.reconcile(name) is not None
    b.jobs.refresh()
    assert b.reconcile(name) is None
    assert b.inner.runs == 0 and _jobs(client) == {"manual": "b", run1: "b"}
    assert _listed(client, name) is None


class _Fixed:
    """An owner cache stuck at one version of the owner."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self._obj = obj

    def get(self, namespace: str | None, name: str) -> dict[str, Any]:
        return self._obj


def test_a_listing_refused_at_every_try_raises_the_last_conflict() -> None:
    clock = FakeClock()
    client, _ = _world(clock, "x")
    client.add_object(CONFIGMAPS, configmap("y", {SHARD: "a"}))
    _unlabelled_job(client, "y", "y-manual")
    client.clear_actions()

    def refuse(action: Action) -> None:
        raise Conflict("the object has been modified", 409, "Conflict")

    client.prepend_reactor("patch", CONFIGMAPS, refuse)
    with pytest.raises(Conflict):
        _hand_over(client, client.get_object(CONFIGMAPS, "y", NS), "y-manual", attempts=3)
    assert [x.verb for x in client.actions] == ["patch", "get"] * 2 + ["patch"]
