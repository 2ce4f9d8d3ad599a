"""The CronJob controller's own metric.

Contract: :func:`skew_histogram` returns the
``cronjob_controller_cronjob_job_creation_skew_duration_seconds`` histogram (seconds between a
run's scheduled time and its Job's creation) of a registry, registered once per registry, or
None without one. Buckets 1, 2, 4, ..., 512 s: upstream kube-controller-manager's
(ExponentialBuckets(1, 2, 10)), so the same alerts work.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram

from pyctrl.collectors import per_registry

__all__ = ["skew_histogram"]

_SKEW_BUCKETS = tuple(float(2**i) for i in range(10))  # 1, 2, 4, ..., 512 s


def _new_skew_histogram(registry: CollectorRegistry | None) -> Histogram:
    return Histogram(
        "cronjob_controller_cronjob_job_creation_skew_duration_seconds",
        "Seconds between a run's scheduled time and the creation of its Job.",
        buckets=_SKEW_BUCKETS,
        registry=registry,
    )


_skew_histograms = per_registry(_new_skew_histogram)


def skew_histogram(registry: CollectorRegistry | None) -> Histogram | None:
    """The creation-skew histogram of ``registry``, or ``None`` without a registry."""
    return None if registry is None else _skew_histograms(registry)
