"""The PNG of ``bench.cronjob_skew``: skew CDFs of each phase (pyctrl, ...) for one tick.

Contract: :func:`plot_cdfs` draws, for each phase that has data, the empirical CDF of the
watch-observed skew (solid, fine resolution) and of the creationTimestamp skew (dashed, 1 s
resolution, a step function) into one PNG, with the Agg backend (no display needed). It
never raises for missing phases; it returns the path it wrote.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["plot_cdfs"]

_COLORS = {"pyctrl": "tab:blue", "pyctrl-sharded": "tab:purple", "upstream": "tab:orange",
           "limit": "tab:green"}


def plot_cdfs(series: Mapping[str, Mapping[str, Sequence[float]]], path: Path,
              title: str) -> Path:
    """``series[phase]`` has ``watch`` and ``created`` skews (seconds); write ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.5))
    for phase, data in series.items():
        color = _COLORS.get(phase)
        for kind, style in (("watch", "-"), ("created", "--")):
            values = sorted(data.get(kind) or [])
            if not values:
                continue
            n = len(values)
            ys = [(i + 1) / n for i in range(n)]
            label = (f"{phase}: watch ADDED - T (n={n})" if kind == "watch"
                     else f"{phase}: creationTimestamp - T (1 s resolution)")
            ax.step(values, ys, where="post", linestyle=style, color=color, label=label)
    ax.set_xlabel("skew: Job created - scheduled tick T (seconds)")
    ax.set_ylabel("fraction of Jobs")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.set_title(title)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
