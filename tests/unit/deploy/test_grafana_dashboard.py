"""The Grafana dashboard in manifests/grafana queries only metrics the code registers.

Every PromQL expression of the dashboard (panel targets, nested rows, template variables) is
reduced to its metric names, and each must be one the code exposes: the names registered with
``Counter``/``Gauge``/``Histogram``/``Summary`` in pyctrl/ and cronjob_controller/, with the
suffixes prometheus_client exposes (``_total`` for counters, ``_bucket``/``_sum``/``_count``
for histograms), and those of the process, GC and platform collectors the Manager puts on its
registry (``register_runtime_collectors``). A misspelled name, or a metric renamed in the
code, fails here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from pyctrl.serving.gcmetrics import register_runtime_collectors

ROOT = Path(__file__).resolve().parents[3]
DASHBOARD = ROOT / "manifests" / "grafana" / "cronjob-controller.json"

_REGISTERED = re.compile(r'\b(Counter|Gauge|Histogram|Summary)\(\s*"([a-zA-Z_:][\w:]*)"')
_PROMQL_WORDS = {
    # aggregations, functions and keywords the dashboard may use
    "sum", "min", "max", "avg", "count", "topk", "bottomk", "by", "without", "on", "ignoring",
    "group_left", "group_right", "and", "or", "unless", "bool", "offset", "rate", "irate",
    "increase", "delta", "histogram_quantile", "clamp_min", "clamp_max", "abs", "time",
    "vector", "scalar", "absent", "changes", "resets", "label_values",
}


def exposed_names() -> set[str]:
    """Every sample name the code's collectors expose."""
    names: set[str] = set()
    for path in [*(ROOT / "pyctrl").rglob("*.py"), *(ROOT / "cronjob_controller").rglob("*.py")]:
        for kind, name in _REGISTERED.findall(path.read_text()):
            if kind == "Counter":
                base = name.removesuffix("_total")
                names |= {f"{base}_total", f"{base}_created"}
            elif kind == "Gauge":
                names.add(name)
            else:
                names |= {name, f"{name}_bucket", f"{name}_sum", f"{name}_count",
                          f"{name}_created"}
    registry = CollectorRegistry()
    register_runtime_collectors(registry)  # process_*, python_gc_*, python_info
    names |= {s.name for family in registry.collect() for s in family.samples}
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (Grafana's ``label_values`` included)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    expr = re.sub(r"\{[^}]*\}", " ", expr)  # label matchers
    expr = re.sub(r"\[[^]]*\]", " ", expr)  # range selectors ($__rate_interval)
    expr = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", " ", expr)  # label lists
    expr = re.sub(r",\s*[a-zA-Z_]\w*\s*\)", ")", expr)  # label_values(m, label): the label
    expr = re.sub(r"\$\w+", " ", expr)  # dashboard variables
    words = set(re.findall(r"[a-zA-Z_:][\w:]*", expr))
    return words - _PROMQL_WORDS


def _exprs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            # PromQL sits in targets' "expr" and variables' "definition" / "query" (a
            # variable's "query" may also be a data source type like "prometheus").
            if isinstance(value, str) and (key in {"expr", "definition"}
                                           or (key == "query" and "(" in value)):
                yield value
            else:
                yield from _exprs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _exprs(item)


def test_extraction_finds_names_and_flags_a_misspelling() -> None:
    known = exposed_names()
    assert {"controller_runtime_reconcile_total", "workqueue_depth",
            "rest_client_requests_total", "leader_election_master_status",
            "cronjob_controller_cronjob_job_creation_skew_duration_seconds_bucket",
            "process_resident_memory_bytes", "process_cpu_seconds_total"} <= known
    expr = ('histogram_quantile(0.99, sum by (controller, le) (rate('
            'controller_runtime_reconcile_time_seconds_bucket{job=~"$job"}[$__rate_interval])))'
            ' / on (controller) controller_runtime_reconcile_totl')
    assert metric_names(expr) == {"controller_runtime_reconcile_time_seconds_bucket",
                                  "controller_runtime_reconcile_totl"}
    assert metric_names(expr) - known == {"controller_runtime_reconcile_totl"}
    assert metric_names('label_values(workqueue_depth{namespace=~"$ns"}, name)') == {
        "workqueue_depth"}


def test_dashboard_parses_and_queries_only_metrics_the_code_registers() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"] and dashboard["panels"]
    exprs = list(_exprs(dashboard))
    assert len(exprs) >= 10
    used = set().union(*(metric_names(e) for e in exprs))
    assert not used - exposed_names(), sorted(used - exposed_names())
    # The families operators look at first: controller-runtime's reconciles, client-go's work
    # queue and REST client, leader election, and the operator's own skew histogram.
    for prefix in ("controller_runtime_reconcile", "workqueue_", "rest_client_",
                   "leader_election_master_status", "cronjob_controller_"):
        assert any(name.startswith(prefix) for name in used), prefix
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]
