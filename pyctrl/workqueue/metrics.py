"""Prometheus metrics for work queues, with client-go's metric names.

Contract:

* Every metric family carries one label, ``name`` (the queue's name), and is registered at
  most once per ``CollectorRegistry``: queues that share a registry share the families and
  get their own labelled children. Families are cached per registry (weakly), so creating
  many queues does not re-register anything.
* Families (client-go names, same meaning):

  - ``workqueue_depth`` (gauge): items waiting to be handed out (client-go counts an item
    re-added while it is being processed here too).
  - ``workqueue_adds_total`` (counter): adds that were not collapsed into a pending duplicate.
  - ``workqueue_queue_duration_seconds`` (histogram): first add -> handed out by ``get``.
  - ``workqueue_work_duration_seconds`` (histogram): ``get`` -> ``done``.
  - ``workqueue_unfinished_work_seconds`` (gauge): sum of the ages of in-flight items.
  - ``workqueue_longest_running_processor_seconds`` (gauge): age of the oldest in-flight item.
  - ``workqueue_retries_total`` (counter): ``add_rate_limited`` calls.

* This module is only touched when a queue is built with a registry; a queue without one
  never calls into it (the queue picks a metric-free code path at construction).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from pyctrl.collectors import per_registry

__all__ = ["QueueMetrics", "queue_metrics"]

# client-go (component-base) buckets: 10ns .. 1000s, factor 10.
_BUCKETS = tuple(1e-8 * 10**i for i in range(12))


@dataclass(frozen=True, slots=True)
class QueueMetrics:
    """The seven families (as registered) or the labelled children one queue updates (all
    for the same ``name``; see :meth:`labels`)."""

    depth: Gauge
    adds: Counter
    queue_duration: Histogram
    work_duration: Histogram
    unfinished_work: Gauge
    longest_running: Gauge
    retries: Counter

    def labels(self, name: str) -> QueueMetrics:
        """The children of these families for queue ``name``."""
        return QueueMetrics(*(getattr(self, f.name).labels(name) for f in fields(self)))


def _new_families(registry: CollectorRegistry | None) -> QueueMetrics:
    label = ("name",)
    return QueueMetrics(
        depth=Gauge(
            "workqueue_depth", "Current depth of workqueue", label, registry=registry
        ),
        adds=Counter(
            "workqueue_adds", "Total number of adds handled by workqueue", label,
            registry=registry,
        ),
        queue_duration=Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            label, registry=registry, buckets=_BUCKETS,
        ),
        work_duration=Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            label, registry=registry, buckets=_BUCKETS,
        ),
        unfinished_work=Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads.",
            label, registry=registry,
        ),
        longest_running=Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            label, registry=registry,
        ),
        retries=Counter(
            "workqueue_retries", "Total number of retries handled by workqueue", label,
            registry=registry,
        ),
    )


_families_of = per_registry(_new_families)


def queue_metrics(registry: CollectorRegistry, name: str) -> QueueMetrics:
    """Return the metric children for queue ``name`` on ``registry`` (registering the
    families on first use of that registry)."""
    return _families_of(registry).labels(name)
