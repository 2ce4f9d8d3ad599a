"""The controller's state is bounded over time: nothing it keeps grows tick after tick.

The soak (``python -m bench soak``) runs ``* * * * *`` CronJobs with history limits 1/1 and
Jobs completed by the bench; its RSS must be flat after warm-up. This test runs the same churn
in-process (:class:`bench.memprofile.Simulation`: the production wiring over a FakeClient and
a FakeClock, one simulated minute per tick) and checks every container that could grow with
time or with the number of Jobs created: each stays within a bound set by the number of
CronJobs, not of ticks (the event correlator's LRU by its documented size), and those with no
such bound do not grow at all after warm-up. A leak of one entry per Job, per event or
per tick (an index value left for a deleted Job's owner, a rate limiter entry never
forgotten, a dead heap entry never removed) fails it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.memprofile import Simulation

CRONJOBS = 20
WARMUP = 12  # ticks: past the correlator's fill (max_similar=10 distinct messages per key)
MORE = 6
REASONS = 3  # SuccessfulCreate, SawCompletedJob, SuccessfulDelete per CronJob per minute
CORRELATOR_CACHE_SIZE = 4096  # EventCorrelator's default LRU size
MAX_SIMILAR = 10


@pytest.fixture
def sim() -> Iterator[Simulation]:
    s = Simulation(CRONJOBS, workers=2, timeout=60.0)
    s.start()
    try:
        yield s
    finally:
        s.close()


def _bounds(n: int) -> dict[str, int]:
    return {
        "queue._dirty": 0, "queue._processing": 0, "queue._queued": 0, "queue._requeue": 0,
        "queue._add_times": 0, "queue._start_times": 0,
        "queue._waiting": n, "queue._delayed_priority": n,
        # lazy deletion: dead entries wait in the heaps until they reach the top
        "queue._heap": 3 * n, "queue._pheap": 3 * n,
        "rate_limiter.0.failures": 0,
        "cronjob_informer.0.items": n, "job_informer.0.items": n,
        "job_informer.0.index.controller-uid.values": n,
        "job_informer.0.index.controller-uid.keys": n,
        "job_informer.0.index.namespace.values": 1,
        "reconciler.reporter": 6 * n, "reconciler.rejected": 0, "reconciler.gone": n,
        "reconciler.runs": n,
        "reconciler.runs._uids_of": n,
        "events.buffer": 0,
        "events.correlator._similar": REASONS * n,
        "events.correlator._similar.messages": MAX_SIMILAR * REASONS * n,
        "events.correlator._buckets": n,
        "events.correlator._logged": CORRELATOR_CACHE_SIZE,
    }


# Readings that move with what the threads happen to be doing at the sample.
_VOLATILE = {"queue._parked", "queue._heap", "queue._pheap", "clock.waiters"}


def test_controller_state_stays_bounded_over_simulated_minutes(sim: Simulation) -> None:
    for _ in range(WARMUP):
        sim.tick()
    warm = sim.containers()
    for _ in range(MORE):
        sim.tick()
    end = sim.containers()

    bounds = _bounds(CRONJOBS)
    # Bounds in CronJobs, not in ticks: after 18 ticks a leak of one entry per Job or per
    # event is far past them (CRONJOBS * 18 Jobs were created and deleted).
    over = {k: (v, bounds[k]) for k, v in end.items() if k in bounds and v > bounds[k]}
    assert over == {}, "containers over their bound: (size, bound)"
    # Containers with no stated bound (e.g. the informers' own lists and dicts) must not
    # grow at all once warm.
    grew = {k: (warm.get(k), v) for k, v in end.items()
            if k not in bounds and k not in _VOLATILE and v > warm.get(k, 0)}
    assert grew == {}, "containers that kept growing after warm-up: (warm, end)"
    assert end["threads"] == warm["threads"]
    assert end["job_informer.0.items"] == CRONJOBS  # history limit 1: one Job per CronJob
