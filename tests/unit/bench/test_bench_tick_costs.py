"""``python -m bench tick-costs`` runs small and reports every step (not its speed)."""

from __future__ import annotations

import argparse

from bench import tick_costs


def test_tick_costs_reports_each_group_and_the_sync_writes() -> None:
    parser = argparse.ArgumentParser()
    tick_costs.add_arguments(parser)
    result = tick_costs.run(parser.parse_args(
        ["--groups", "write,status,event,sync", "--rounds", "1", "--iterations", "5",
         "--cronjobs", "10"]))
    for group in ("write", "status", "event"):
        steps = result[group]
        assert all(v["median_us"] > 0 for k, v in steps.items() if k != "bytes")
    # Each CronJob: one Job create, then one status patch.
    assert result["sync"]["writes_per_round"] == 20
