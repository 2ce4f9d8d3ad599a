"""The verdict of ``bench.cronjob_skew``: same-run ratios and issues 15/16's goals (pure).

Contract:

* :func:`ratio` is ``a / b`` rounded to 3 places, or None unless both are numbers and ``b > 0``.
* :func:`ratios` takes the three phase results (``pyctrl``, ``upstream``, ``limit``; a missing
  or failed phase is an empty mapping) and returns every ratio the JSON reports, each None
  when a side is missing. ``p99``/``p50``/``max`` and ``p99_created`` are pyctrl / upstream
  skew; ``p99_vs_limit`` (and ``p99_created_vs_limit``) pyctrl / the limit phase;
  ``upstream_p99_vs_limit`` upstream / the limit; ``cpu`` (also under its older name
  ``cpu_seconds``) pyctrl's CPU seconds in the window / upstream's; ``rss`` (also
  ``peak_rss_mib``) pyctrl's peak RSS in the window / upstream's; ``cache_sync`` pyctrl's
  start-to-caches-synced seconds / upstream's.
* :func:`skew_fields` turns the Jobs of one tick into a phase's skew figures: ``p50``/``p99``/
  ``max`` of the watch skew (seen - T), ``count``/``missing`` against ``n``, ``skew_watch`` and
  ``skew_created`` summaries, and ``annotation_mismatches`` (Jobs whose scheduled-timestamp
  annotation ``annotation`` is absent or not T).
* :func:`duplicates` counts the surplus Jobs scheduled at T: among all Jobs seen whose
  scheduled-timestamp annotation is T, those beyond one per owning CronJob (0 when every
  CronJob got at most one run of T, whatever the Jobs are called).
* :func:`shard_ratios` compares the sharded phase (``--shards N``) with the single replica of
  the same run: ``shard_cpu_max_vs_single`` (the busiest replica's CPU seconds in the window /
  the single replica's), ``shard_cpu_sum_vs_single`` (all replicas together / the single
  one), ``shard_rss_max_vs_single`` (the highest replica peak RSS / the single one's) and
  ``shard_p99_vs_single`` (p99 skew over all Jobs / the single one's); None when a side is
  missing.
* :data:`GOALS` maps each goal of issue 15 to the ratio it judges and the bound that ratio
  must stay at or under, :data:`SHARD_GOALS` issue 16's goal for ``--shards`` (the busiest
  replica uses at most 0.4x the single replica's CPU); :func:`goals` returns, per goal of
  ``table`` (default :data:`GOALS`), ``ratio`` (its key), ``at_most``, ``value`` and ``met``
  (True/False, None when the ratio is missing).
* :func:`verdict` is a run's ``ratio`` and ``goals`` from its phase results: issue 15's always,
  the shard ratios and :data:`SHARD_GOALS` added only for a sharded run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.cronjob_skew.probe import JobSeen, parse_rfc3339, summary

__all__ = [
    "GOALS",
    "SHARD_GOALS",
    "Goal",
    "duplicates",
    "goals",
    "ratio",
    "ratios",
    "shard_ratios",
    "skew_fields",
    "verdict",
]


@dataclass(frozen=True)
class Goal:
    """``ratios()[ratio] <= at_most``."""

    ratio: str
    at_most: float


GOALS: dict[str, Goal] = {
    "p99_vs_limit": Goal("p99_vs_limit", 1.15),  # pyctrl p99 <= 1.15x the API server's limit
    "p99_vs_upstream": Goal("p99", 0.5),  # pyctrl p99 <= 0.5x kube-controller-manager's
    "cpu": Goal("cpu", 1.0),  # pyctrl CPU seconds at the tick <= upstream's
    "rss": Goal("rss", 1.0),  # pyctrl peak RSS at the tick <= upstream's
}
SHARD_GOALS: dict[str, Goal] = {
    # --shards N: the busiest replica's CPU seconds at the tick <= 0.4x one replica doing all
    "shard_cpu": Goal("shard_cpu_max_vs_single", 0.4),
}


def ratio(a: object, b: object) -> float | None:
    """``round(a / b, 3)`` for numbers with ``b > 0``, else None."""
    if (isinstance(a, int | float) and not isinstance(a, bool)
            and isinstance(b, int | float) and not isinstance(b, bool) and b > 0):
        return round(a / b, 3)
    return None


def _created_p99(phase: Mapping[str, object]) -> object:
    created = phase.get("skew_created")
    return created.get("p99") if isinstance(created, Mapping) else None


def ratios(pyctrl: Mapping[str, object], upstream: Mapping[str, object],
           limit: Mapping[str, object]) -> dict[str, float | None]:
    """Every ratio of the run (see the module docstring)."""
    out = {key: ratio(pyctrl.get(key), upstream.get(key))
           for key in ("p99", "p50", "max", "cpu_seconds", "peak_rss_mib")}
    out["p99_created"] = ratio(_created_p99(pyctrl), _created_p99(upstream))
    out["p99_vs_limit"] = ratio(pyctrl.get("p99"), limit.get("p99"))
    out["p99_created_vs_limit"] = ratio(_created_p99(pyctrl), _created_p99(limit))
    out["upstream_p99_vs_limit"] = ratio(upstream.get("p99"), limit.get("p99"))
    out["cpu"] = out["cpu_seconds"]
    out["rss"] = out["peak_rss_mib"]
    out["cache_sync"] = ratio(pyctrl.get("cache_sync_seconds"),
                              upstream.get("cache_sync_seconds"))
    return out


def shard_ratios(single: Mapping[str, object],
                 sharded: Mapping[str, object]) -> dict[str, float | None]:
    """The sharded phase against the single replica (see the module docstring)."""
    cpu = single.get("cpu_seconds")
    return {
        "shard_cpu_max_vs_single": ratio(sharded.get("cpu_seconds_max"), cpu),
        "shard_cpu_sum_vs_single": ratio(sharded.get("cpu_seconds_sum"), cpu),
        "shard_rss_max_vs_single": ratio(sharded.get("peak_rss_mib_max"),
                                         single.get("peak_rss_mib")),
        "shard_p99_vs_single": ratio(sharded.get("p99"), single.get("p99")),
    }


def goals(measured: Mapping[str, float | None],
          table: Mapping[str, Goal] = GOALS) -> dict[str, dict[str, object]]:
    """Each goal of ``table`` judged on ``measured`` (the output of :func:`ratios`)."""
    out: dict[str, dict[str, object]] = {}
    for name, goal in table.items():
        value = measured.get(goal.ratio)
        out[name] = {"ratio": goal.ratio, "at_most": goal.at_most, "value": value,
                     "met": None if value is None else value <= goal.at_most}
    return out


def verdict(phases: Mapping[str, Mapping[str, object]], sharded: bool
            ) -> tuple[dict[str, float | None], dict[str, dict[str, object]]]:
    """``(ratio, goals)`` of a run whose phase results are ``phases`` (a phase that did not
    run or failed may be absent or an empty/error mapping)."""
    pyctrl = phases.get("pyctrl", {})
    measured = ratios(pyctrl, phases.get("upstream", {}), phases.get("limit", {}))
    judged = goals(measured)
    if sharded:
        measured |= shard_ratios(pyctrl, phases.get("pyctrl-sharded", {}))
        judged |= goals(measured, SHARD_GOALS)
    return measured, judged


def skew_fields(jobs: Sequence[JobSeen], tick: float, n: int,
                annotation: str) -> dict[str, object]:
    """The skew figures of one phase (see the module docstring)."""
    skew_watch = summary([j.seen_at - tick for j in jobs])
    return {
        "p50": skew_watch["p50"], "p99": skew_watch["p99"], "max": skew_watch["max"],
        "count": len(jobs), "missing": n - len(jobs),
        "skew_watch": skew_watch,
        "skew_created": summary([j.created - tick for j in jobs]),
        "annotation_mismatches": annotation_mismatches(jobs, tick, annotation),
    }


def annotation_mismatches(jobs: Sequence[JobSeen], tick: float, annotation: str) -> int:
    """Jobs whose ``annotation`` (the scheduled timestamp) is absent or is not ``tick``."""
    bad = 0
    for job in jobs:
        value = job.annotations.get(annotation)
        try:
            if value is None or abs(parse_rfc3339(value) - tick) > 0.5:
                bad += 1
        except ValueError:
            bad += 1
    return bad


def duplicates(jobs: Sequence[JobSeen], tick: float, annotation: str) -> int:
    """Jobs scheduled at ``tick`` beyond one per owning CronJob (see the module docstring)."""
    owners: list[str] = []
    for job in jobs:
        value = job.annotations.get(annotation)
        try:
            if value is not None and abs(parse_rfc3339(value) - tick) <= 0.5:
                owners.append(job.owner or job.name)
        except ValueError:
            continue
    return len(owners) - len(set(owners))
